package bench

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/cluster"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// accessTimeout bounds the up-front checks, so that an unreachable cluster is
// an error in seconds rather than a hang.
const accessTimeout = cluster.Timeout

// checkAccess makes sure, before anything is measured, that the cluster answers,
// accepts the credentials, and lets the user list and watch every resource to
// be cached, and serves it: the informers in the children would otherwise
// retry forever, quietly.
func checkAccess(ctx context.Context, c cluster.Target, refs []ResourceRef) error {
	var perms []cluster.Permission
	for _, r := range refs {
		perms = append(perms, cluster.Allow(r.Group, r.Resource, r.Namespace, "list", "watch")...)
	}
	if err := c.Check(ctx, perms...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, accessTimeout)
	defer cancel()
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = accessTimeout
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, r := range refs {
		gvr := r.GroupVersionResource
		where := "all namespaces"
		if r.Namespace != "" {
			where = "namespace " + r.Namespace
		}
		res := dyn.Resource(gvr).Namespace(r.Namespace)
		list, err := res.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return accessError("list", gvr, where, err)
		}
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), TimeoutSeconds: ptr(int64(1))})
		if err != nil {
			return accessError("watch", gvr, where, err)
		}
		w.Stop()
	}
	return nil
}

func accessError(verb string, gvr schema.GroupVersionResource, where string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: cannot %s %s in %s: %w", verb, gvr.Resource, where, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the cluster does not serve %s (%s): %w", gvr.Resource, gvr.GroupVersion(), err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("unauthorized: the cluster rejected the kubeconfig's credentials: %w", err)
	}
	return fmt.Errorf("%s %s in %s: %w", verb, gvr.Resource, where, err)
}

// checkNewNamespace refuses to seed into a namespace that exists: --seed
// writes and then deletes everything in its namespace.
func checkNewNamespace(ctx context.Context, cfg *rest.Config, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, accessTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil:
		return fmt.Errorf("namespace %s exists: --seed needs a namespace of its own (it deletes it afterwards); leave --namespace out for a new one", ns)
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: cannot read namespace %s to check that it is new: %w", ns, err)
	}
	return fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)
}

// SeedPermissions are what seeding spec (dataset.Seed) and cleaning it up
// (dataset.Clean) do on a cluster, for cluster.Target.Check.
func SeedPermissions(spec dataset.Spec) []cluster.Permission {
	ns := spec.Namespace
	// The namespace is applied (created when missing).
	perms := cluster.Allow("", "namespaces", "", "create", "patch")
	for _, gvr := range []schema.GroupVersionResource{dataset.PodsGVR, dataset.ConfigMapsGVR, dataset.SecretsGVR, dataset.NodesGVR, dataset.WidgetGVR} {
		if spec.Count(gvr) == 0 {
			continue
		}
		where := ns
		if dataset.ClusterScoped(gvr) {
			where = ""
		}
		perms = append(perms, cluster.Allow(gvr.Group, gvr.Resource, where, "create", "patch", "list")...)
		if gvr != dataset.ConfigMapsGVR && gvr != dataset.SecretsGVR {
			// Pods, Nodes and Widgets get a status of their own.
			perms = append(perms, cluster.Permission{Verb: "patch", Group: gvr.Group, Resource: gvr.Resource, Subresource: "status", Namespace: where})
		}
		if gvr == dataset.WidgetGVR {
			perms = append(perms, cluster.Allow("apiextensions.k8s.io", "customresourcedefinitions", "", "create", "patch")...)
		}
	}
	return perms
}

// CleanPermissions are what dataset.Clean does in namespace.
func CleanPermissions(namespace string) []cluster.Permission {
	var perms []cluster.Permission
	for _, gvr := range []schema.GroupVersionResource{dataset.PodsGVR, dataset.ConfigMapsGVR, dataset.SecretsGVR} {
		perms = append(perms, cluster.Allow(gvr.Group, gvr.Resource, namespace, "list", "deletecollection")...)
	}
	return perms
}

// runSeedPermissions are what a run with --seed does: seed, change objects
// before the re-lists (churn), and delete the dataset and its namespace.
func runSeedPermissions(spec dataset.Spec, plan Plan) []cluster.Permission {
	perms := SeedPermissions(spec)
	perms = append(perms, CleanPermissions(spec.Namespace)...)
	perms = append(perms, cluster.Allow("", "namespaces", "", "get", "delete")...)
	if slices.ContainsFunc(plan.Churn, func(c float64) bool { return c > 0 }) {
		for _, gvr := range []schema.GroupVersionResource{dataset.PodsGVR, dataset.ConfigMapsGVR, dataset.SecretsGVR, dataset.WidgetGVR} {
			if spec.Count(gvr) > 0 {
				perms = append(perms, cluster.Allow(gvr.Group, gvr.Resource, spec.Namespace, "update", "delete")...)
			}
		}
	}
	return perms
}

func ptr[T any](v T) *T { return &v }
