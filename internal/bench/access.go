package bench

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/internal/cluster"
)

// accessTimeout bounds the up-front checks, so that an unreachable cluster is
// an error in seconds rather than a hang.
const accessTimeout = cluster.Timeout

// checkAccess makes sure, before anything is measured, that the cluster answers
// and that the user may list and watch every resource to be cached: the
// informers in the children would otherwise retry forever, quietly.
func checkAccess(ctx context.Context, cfg *rest.Config, refs []ResourceRef) error {
	if err := cluster.Reachable(ctx, cfg); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, accessTimeout)
	defer cancel()
	cfg = rest.CopyConfig(cfg)
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

// checkProxyable rejects identities that cannot pass through the fault proxy,
// which forwards each client's Authorization header over plain HTTP: a client
// certificate cannot be forwarded.
func checkProxyable(cfg *rest.Config) error {
	hasCert := len(cfg.CertData) > 0 || cfg.CertFile != ""
	hasOther := cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Username != ""
	if hasCert && !hasOther {
		return errors.New("the kubeconfig's user authenticates with a client certificate, which cannot pass through cachebench's proxy (it forces the re-lists); use a user with a token")
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
