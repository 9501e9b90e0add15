package dataset

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var cleanOrder = []schema.GroupVersionResource{PodsGVR, ConfigMapsGVR, SecretsGVR, NodesGVR, WidgetGVR}

// Clean deletes every object of the named dataset in namespace (those labelled
// LabelDataset=name, and the dataset's Nodes, labelled LabelNamespace=namespace
// too) and waits until they are gone. It leaves the namespace and the Widget CRD
// in place; DeleteNamespace removes a namespace cachebench created.
func Clean(ctx context.Context, cfg *rest.Config, namespace, name string, progress func(Progress)) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, gvr := range cleanOrder {
		res := dynamic.ResourceInterface(dyn.Resource(gvr).Namespace(namespace))
		sel := metav1.ListOptions{LabelSelector: LabelDataset + "=" + name}
		if ClusterScoped(gvr) {
			res = dyn.Resource(gvr)
			sel.LabelSelector += "," + LabelNamespace + "=" + namespace
		}
		list, err := res.List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, Limit: 1})
		if err != nil {
			if gvr == WidgetGVR {
				continue // CRD not installed
			}
			return fmt.Errorf("list %s in %s: %w", gvr.Resource, namespace, err)
		}
		if len(list.Items) == 0 {
			continue
		}
		grace := int64(0)
		if err := res.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, sel); err != nil {
			return fmt.Errorf("delete %s in %s: %w", gvr.Resource, namespace, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			l, err := res.List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, Limit: 1})
			if err != nil {
				return false, err
			}
			return len(l.Items) == 0, nil
		})
		if err != nil {
			return fmt.Errorf("wait for %s in %s to be deleted: %w", gvr.Resource, namespace, err)
		}
		if progress != nil {
			progress(Progress{Kind: gvr.Resource, Elapsed: time.Since(start)})
		}
	}
	return nil
}

// DeleteNamespace deletes a namespace. On a server without a controller manager
// (the local test server) the namespace stays Terminating; on a real cluster it goes.
func DeleteNamespace(ctx context.Context, cfg *rest.Config, namespace string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Delete(ctx, namespace, metav1.DeleteOptions{})
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", namespace, err)
	}
	return nil
}
