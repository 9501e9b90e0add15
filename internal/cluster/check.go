package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The kinds of failure Check reports; its errors wrap one of them.
var (
	ErrUnreachable  = errors.New("cluster unreachable")
	ErrUnauthorized = errors.New("credentials rejected")
	ErrForbidden    = errors.New("permission denied")
)

// Permission is one thing a command is about to do on the cluster, checked
// up front with a SelfSubjectAccessReview: the authorizer's answer, without
// failing half-way through.
type Permission struct {
	Verb string
	// Group and Resource name the resource ("" is the core group);
	// Subresource is "status" for a status write.
	Group, Resource, Subresource string
	// Namespace is "" for all namespaces, or for a cluster-scoped resource.
	Namespace string
}

// Allow lists the permissions of verbs on a resource in a namespace.
func Allow(group, resource, namespace string, verbs ...string) []Permission {
	out := make([]Permission, len(verbs))
	for i, v := range verbs {
		out[i] = Permission{Verb: v, Group: group, Resource: resource, Namespace: namespace}
	}
	return out
}

func (p Permission) String() string {
	res := p.Resource
	if p.Group != "" {
		res += "." + p.Group
	}
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	if p.Namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", p.Verb, res, p.Namespace)
	}
	return p.Verb + " " + res
}

// canI is the kubectl command that shows the answer to p.
func (p Permission) canI() string {
	res := p.Resource
	if p.Group != "" {
		res += "." + p.Group
	}
	cmd := "kubectl auth can-i " + p.Verb + " " + res
	if p.Subresource != "" {
		cmd += " --subresource " + p.Subresource
	}
	if p.Namespace != "" {
		return cmd + " -n " + p.Namespace
	}
	return cmd + " -A"
}

// Reachable asks the cluster for its version, within Timeout.
func Reachable(ctx context.Context, cfg *rest.Config) error {
	return Target{Config: cfg}.reachable(ctx)
}

// Check makes sure, within Timeout, that the cluster answers, accepts the
// credentials, and allows every permission in perms. Each error is one line
// that says what to do, and wraps ErrUnreachable, ErrUnauthorized or
// ErrForbidden. When the cluster does not answer access reviews (an identity
// may not even ask), the permissions are left to fail where they are used.
func (t Target) Check(ctx context.Context, perms ...Permission) error {
	if err := t.reachable(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cfg := rest.CopyConfig(t.Config)
	cfg.Timeout = Timeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	user := t.who()
	// Who the cluster takes us for: the name RBAC rules must grant to.
	if r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
		user = r.Status.UserInfo.Username
	}
	var denied []Permission
	for _, p := range perms {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
			},
		}}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil // cannot ask: the command's own requests will say
		}
		if !got.Status.Allowed || got.Status.Denied {
			denied = append(denied, p)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	names := make([]string, len(denied))
	for i, p := range denied {
		names[i] = p.String()
	}
	return &checkError{ErrForbidden, fmt.Sprintf("forbidden: %s may not %s: ask for a Role that grants it, or choose a --context whose user has one ('%s' tells)",
		user, strings.Join(names, ", "), denied[0].canI())}
}

// reachable asks for the server's version: an unreachable cluster or
// rejected credentials fail here, before anything else is tried.
func (t Target) reachable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cfg := rest.CopyConfig(t.Config)
	cfg.Timeout = Timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = dc.ServerVersionWithContext(ctx)
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return &checkError{ErrUnauthorized, fmt.Sprintf("unauthorized: the cluster at %s rejected the credentials of %s: renew them (kind export kubeconfig, minikube update-context, or your provider's login) or choose another --context",
			cfg.Host, t.who())}
	}
	return &checkError{ErrUnreachable, fmt.Sprintf("cannot reach the cluster at %s: %v (is it running, and is that its address? kubectl cluster-info tells)", cfg.Host, err)}
}

// checkError is a failed check: its message for the user, its kind for
// errors.Is.
type checkError struct {
	kind error
	msg  string
}

func (e *checkError) Error() string { return e.msg }
func (e *checkError) Unwrap() error { return e.kind }
