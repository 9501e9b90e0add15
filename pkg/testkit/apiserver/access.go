package apiserver

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AwaitAccess waits until the identity of cfg may do every one of attrs,
// asking the server with a SelfSubjectAccessReview every 50 ms, until ctx
// ends. The RBAC authorizer reads Roles and RoleBindings from its own
// informers, so a grant just written takes effect a moment later (seconds on
// a loaded machine): a test that uses a grant waits for it here first. The
// review goes through the same authorizer as the request it stands for.
func AwaitAccess(ctx context.Context, cfg *rest.Config, attrs ...authorizationv1.ResourceAttributes) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, a := range attrs {
		for {
			review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}},
				metav1.CreateOptions{})
			if err == nil && review.Status.Allowed {
				break
			}
			select {
			case <-ctx.Done():
				if err == nil {
					err = fmt.Errorf("not allowed: %s", review.Status.Reason)
				}
				return fmt.Errorf("wait for access to %s %s in %q: %w (%w)", a.Verb, a.Resource, a.Namespace, ctx.Err(), err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// ReadAccess is the attributes of get, list and watch of resource (in group,
// "" for core) in namespace: what an informer needs.
func ReadAccess(namespace, group, resource string) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	for _, verb := range []string{"get", "list", "watch"} {
		out = append(out, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: resource})
	}
	return out
}
