package doctor

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// access asks the API server whether the identity may list and watch t in
// namespace (all namespaces when empty), with one SelfSubjectAccessReview per
// verb: the answer the authorizer would give the informer, without making it
// fail first. ok is false when the review itself could not be made (an old
// server, or an identity not even allowed to ask); the caller then finds out
// by listing.
func access(ctx context.Context, cs kubernetes.Interface, t target, namespace string) (a Access, ok bool) {
	if !t.namespaced {
		namespace = ""
	}
	a.Checked = true
	var denied []string
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Group: t.gvr.Group, Version: t.gvr.Version, Resource: t.gvr.Resource,
			},
		}}
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return Access{Reason: fmt.Sprintf("access not checked: %v", err)}, false
		}
		allowed := got.Status.Allowed && !got.Status.Denied
		switch verb {
		case "list":
			a.List = allowed
		case "watch":
			a.Watch = allowed
		}
		if !allowed {
			why := got.Status.Reason
			if why == "" {
				why = got.Status.EvaluationError
			}
			if why == "" {
				why = "no RBAC rule allows it"
			}
			denied = append(denied, fmt.Sprintf("%s: %s", verb, why))
		}
	}
	a.Reason = strings.Join(denied, "; ")
	return a, true
}

// scope describes where a resource was read, for messages.
func scope(t target, namespace string) string {
	switch {
	case !t.namespaced:
		return "the cluster"
	case namespace == "":
		return "all namespaces"
	}
	return "namespace " + namespace
}
