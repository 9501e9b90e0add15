package dataset_test

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/dataset"
	"github.com/cachetune/cachetune/pkg/testapiserver"
)

var srv *testapiserver.Server

func TestMain(m *testing.M) {
	os.Exit(testapiserver.Main(m, testapiserver.Options{}, &srv))
}

func TestSeedMeasureClean(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	spec := dataset.Spec{Name: "small", Namespace: ns, Pods: 40, ConfigMaps: 5, Secrets: 3, SecretBytes: 64 << 10, Widgets: 6}
	var last dataset.Progress
	spec.Progress = func(p dataset.Progress) {
		if p.Kind == "pods" {
			last = p
		}
	}
	if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
		t.Fatal(err)
	}
	if last.Done != 40 || last.Total != 40 {
		t.Errorf("last pod progress = %d/%d, want 40/40", last.Done, last.Total)
	}

	pods, err := srv.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 40 {
		t.Fatalf("%d pods, want 40", len(pods.Items))
	}
	for _, p := range pods.Items {
		managers := map[string]bool{}
		for _, mf := range p.ManagedFields {
			managers[mf.Manager] = true
		}
		if !managers[dataset.ApplyManager] || !managers[dataset.StatusManager] {
			t.Fatalf("pod %s managers %v, want %s and %s", p.Name, managers, dataset.ApplyManager, dataset.StatusManager)
		}
		if p.Annotations[dataset.LastAppliedAnnotation] == "" {
			t.Fatalf("pod %s has no last-applied annotation", p.Name)
		}
		if len(p.Spec.Containers) < 2 || len(p.Spec.InitContainers) != 1 || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) || len(p.OwnerReferences) != 1 {
			t.Fatalf("pod %s is not realistic: %d containers, %d statuses, %d owners",
				p.Name, len(p.Spec.Containers), len(p.Status.ContainerStatuses), len(p.OwnerReferences))
		}
	}

	sizes, err := dataset.Measure(ctx, srv.Config, dataset.PodsGVR, ns, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod sizes: %+v", sizes)
	if sizes.Count != 40 || sizes.Managers < 2 {
		t.Errorf("measured %d pods with %.1f managers each, want 40 with at least 2", sizes.Count, sizes.Managers)
	}
	// The standard Pod is about 20 KB of JSON, of which managedFields and the
	// last-applied annotation are large shares.
	if sizes.JSON < 15000 || sizes.JSON > 26000 {
		t.Errorf("mean pod JSON %.0f bytes, want about 20 KB", sizes.JSON)
	}
	if sizes.JSONWithoutManagedFields >= sizes.JSON-sizes.ManagedFields*0.9 || sizes.ManagedFields < 3000 || sizes.LastApplied < 3000 {
		t.Errorf("sizes %+v: want managedFields and last-applied of several KB each", sizes)
	}
	if sizes.Protobuf == 0 || sizes.Protobuf >= sizes.JSON {
		t.Errorf("protobuf size %.0f, want below JSON %.0f", sizes.Protobuf, sizes.JSON)
	}

	dyn := dynamic.NewForConfigOrDie(srv.Config)
	widgets, err := dyn.Resource(dataset.WidgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(widgets.Items) != 6 || len(widgets.Items[0].GetManagedFields()) < 2 {
		t.Fatalf("%d widgets, first with %d managers", len(widgets.Items), len(widgets.Items[0].GetManagedFields()))
	}

	if err := dataset.Clean(ctx, srv.Config, ns, "small", nil); err != nil {
		t.Fatal(err)
	}
	for _, gvr := range []struct{ name, res string }{{"pods", "pods"}, {"configmaps", "configmaps"}, {"secrets", "secrets"}} {
		l, err := dyn.Resource(dataset.PodsGVR.GroupVersion().WithResource(gvr.res)).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: dataset.LabelDataset + "=small"})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 0 {
			t.Errorf("%d %s left after Clean", len(l.Items), gvr.name)
		}
	}
}
