package resilience

import (
	"context"
	"fmt"

	authnv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// grant lets the identity of restricted get, list and watch gvr in
// namespace: a Role and a RoleBinding made with the admin config. The user
// name comes from a SelfSubjectReview, which every authenticated identity
// may create. It returns once the server's authorizer allows the identity
// all three (apiserver.AwaitAccess): the authorizer reads RBAC from its own
// informers, a moment (seconds on a loaded machine) after the writes, and
// that lag is the server's, not the informer's under test.
func grant(ctx context.Context, admin *rest.Config, namespace string, gvr schema.GroupVersionResource, restricted *rest.Config) error {
	who, err := kubernetes.NewForConfig(restricted)
	if err != nil {
		return err
	}
	review, err := who.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("who is the restricted identity: %w", err)
	}
	user := review.Status.UserInfo.Username

	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	name := "resilience-read-" + gvr.Resource
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{gvr.Group}, Resources: []string{gvr.Resource},
			Verbs: []string{"get", "list", "watch"},
		}},
	}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create role %s/%s: %w", namespace, name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create role binding %s/%s for %s: %w", namespace, name, user, err)
	}
	return apiserver.AwaitAccess(ctx, restricted, apiserver.ReadAccess(namespace, gvr.Group, gvr.Resource)...)
}
