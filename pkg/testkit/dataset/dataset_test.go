package dataset_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

func TestSeedMeasureClean(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	spec := dataset.Spec{Name: "small", Namespace: ns, Pods: 40, ConfigMaps: 5, Secrets: 3, SecretBytes: 64 << 10, Nodes: 4, Widgets: 6}
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

	nodes, err := srv.Clientset().CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: dataset.Selector(spec, dataset.NodesGVR)})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 4 {
		t.Fatalf("%d nodes, want 4", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if len(n.ManagedFields) != 2 || len(n.Status.Images) != 50 || len(n.Status.Conditions) != 4 || n.Status.NodeInfo.KubeletVersion == "" {
			t.Fatalf("node %s is not realistic: %d managers, %d images, %d conditions", n.Name, len(n.ManagedFields), len(n.Status.Images), len(n.Status.Conditions))
		}
	}
	nodeSizes, err := dataset.Measure(ctx, srv.Config, dataset.NodesGVR, "", dataset.Selector(spec, dataset.NodesGVR))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node sizes: %+v", nodeSizes)

	// Growing the dataset writes only the new objects.
	before, err := srv.Clientset().CoreV1().Pods(ns).Get(ctx, pods.Items[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	grown := spec
	grown.Pods = 50
	if err := dataset.Extend(ctx, srv.Config, grown, spec); err != nil {
		t.Fatal(err)
	}
	if l, err := srv.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 50 {
		t.Fatalf("after Extend to 50 pods: %v, %d pods", err, len(l.Items))
	}
	if after, err := srv.Clientset().CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{}); err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("Extend wrote a pod that existed: %v, resourceVersion %s then %s", err, before.ResourceVersion, after.ResourceVersion)
	}

	if err := dataset.Clean(ctx, srv.Config, ns, "small", nil); err != nil {
		t.Fatal(err)
	}
	if l, err := srv.Clientset().CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: dataset.Selector(spec, dataset.NodesGVR)}); err != nil || len(l.Items) != 0 {
		t.Errorf("after Clean: %v, %d nodes left", err, len(l.Items))
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

// TestChurnStepAndRestore checks that a churn step makes exactly the changes it
// reports, keeps managedFields in shape, and that Restore brings the dataset
// back so that the next step picks the same objects.
func TestChurnStepAndRestore(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	spec := dataset.Spec{Name: "churn", Namespace: ns, Pods: 200, ConfigMaps: 20, Nodes: 10, Widgets: 10}
	if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	type state map[string]string // name -> resourceVersion
	read := func(gvr schema.GroupVersionResource) (state, map[string]int) {
		t.Helper()
		l, err := dyn.Resource(gvr).Namespace(dataset.NamespaceOf(spec, gvr)).List(ctx, metav1.ListOptions{LabelSelector: dataset.Selector(spec, gvr)})
		if err != nil {
			t.Fatal(err)
		}
		st, managers := state{}, map[string]int{}
		for _, o := range l.Items {
			st[o.GetName()] = o.GetResourceVersion()
			managers[o.GetName()] = len(o.GetManagedFields())
		}
		return st, managers
	}
	c, err := dataset.NewChurner(srv.Config, spec, 7)
	if err != nil {
		t.Fatal(err)
	}
	type diff struct{ updated, created, deleted []string }
	compare := func(before, after state) diff {
		var d diff
		for n, rv := range before {
			switch arv, ok := after[n]; {
			case !ok:
				d.deleted = append(d.deleted, n)
			case arv != rv:
				d.updated = append(d.updated, n)
			}
		}
		for n := range after {
			if _, ok := before[n]; !ok {
				d.created = append(d.created, n)
			}
		}
		slices.Sort(d.updated)
		slices.Sort(d.created)
		slices.Sort(d.deleted)
		return d
	}
	for _, gvr := range []schema.GroupVersionResource{dataset.PodsGVR, dataset.ConfigMapsGVR, dataset.NodesGVR, dataset.WidgetGVR} {
		t.Run(gvr.Resource, func(t *testing.T) {
			n := spec.Count(gvr)
			before, managers := read(gvr)
			if len(before) != n {
				t.Fatalf("%d %s seeded, want %d", len(before), gvr.Resource, n)
			}
			want := dataset.PlanChanges(n, 0.5)
			got, err := c.Step(ctx, gvr, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			if got != want || want.Updated != n/2 || want.Created == 0 {
				t.Fatalf("Step reported %+v, plan %+v", got, want)
			}
			after, afterManagers := read(gvr)
			first := compare(before, after)
			if len(first.updated) != want.Updated || len(first.created) != want.Created || len(first.deleted) != want.Deleted {
				t.Fatalf("the server shows %d updated, %d created, %d deleted; Step reported %+v",
					len(first.updated), len(first.created), len(first.deleted), got)
			}
			for _, name := range first.updated {
				if afterManagers[name] != managers[name] {
					t.Errorf("%s %s: %d managedFields entries after the update, %d before", gvr.Resource, name, afterManagers[name], managers[name])
				}
			}
			all, err := c.Step(ctx, gvr, 1)
			if err != nil {
				t.Fatal(err)
			}
			if left := n - got.Deleted - all.Deleted; all.Updated != left {
				t.Errorf("churn 1 updated %d of the %d seeded objects left", all.Updated, left)
			}
			if err := c.Restore(ctx); err != nil {
				t.Fatal(err)
			}
			restored, _ := read(gvr)
			if d := compare(before, restored); len(d.created) != 0 || len(d.deleted) != 0 {
				t.Fatalf("after Restore: %d objects more, %d missing", len(d.created), len(d.deleted))
			}
			if _, err := c.Step(ctx, gvr, 0.5); err != nil {
				t.Fatal(err)
			}
			again, _ := read(gvr)
			second := compare(restored, again)
			if diff := cmp.Diff(first.deleted, second.deleted); diff != "" {
				t.Errorf("the step after Restore deleted other objects (-first +second):\n%s", diff)
			}
			if diff := cmp.Diff(first.created, second.created); diff != "" {
				t.Errorf("the step after Restore created other objects (-first +second):\n%s", diff)
			}
			// Objects deleted and written again by Restore have new versions:
			// compare the updates among the others.
			if diff := cmp.Diff(without(first.updated, first.deleted), without(second.updated, first.deleted)); diff != "" {
				t.Errorf("the step after Restore updated other objects (-first +second):\n%s", diff)
			}
			if err := c.Restore(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := c.Step(ctx, dataset.SecretsGVR, 0.1); err == nil {
		t.Error("Step on a resource the dataset has none of succeeded")
	}
	if _, err := c.Step(ctx, dataset.PodsGVR, 1.5); err == nil {
		t.Error("Step with a fraction of 1.5 succeeded")
	}
}

func without(s, drop []string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(x string) bool { return slices.Contains(drop, x) })
}

func TestPlanChanges(t *testing.T) {
	for _, tc := range []struct {
		n        int
		fraction float64
		want     dataset.Changes
	}{
		{10000, 0, dataset.Changes{}},
		{10000, 0.1, dataset.Changes{Updated: 1000, Created: 100, Deleted: 100}},
		{10000, 1, dataset.Changes{Updated: 9000, Created: 1000, Deleted: 1000}},
		{3, 1, dataset.Changes{Updated: 3, Created: 0, Deleted: 0}},
		{7, 0.5, dataset.Changes{Updated: 4, Created: 0, Deleted: 0}},
	} {
		if got := dataset.PlanChanges(tc.n, tc.fraction); got != tc.want {
			t.Errorf("PlanChanges(%d, %v) = %+v, want %+v", tc.n, tc.fraction, got, tc.want)
		}
	}
}

// TestPodShapes checks what the shapes promise: the Pods of one workload share
// their template; unique Pods share none of env values, image tag and hash.
func TestPodShapes(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		shape dataset.PodShape
		same  bool
	}{{dataset.PodsByWorkload, true}, {dataset.PodsUnique, false}} {
		spec := dataset.Spec{Namespace: "ns", PodShape: tc.shape}
		a, b := dataset.NewPod(spec, 3, now), dataset.NewPod(spec, 11, now) // the same app
		if a.Labels["app.kubernetes.io/name"] != b.Labels["app.kubernetes.io/name"] {
			t.Fatalf("pods 3 and 11 are of different apps")
		}
		for what, pair := range map[string][2]string{
			"template hash": {a.Labels["pod-template-hash"], b.Labels["pod-template-hash"]},
			"image":         {a.Spec.Containers[0].Image, b.Spec.Containers[0].Image},
			"env value":     {a.Spec.Containers[0].Env[5].Value, b.Spec.Containers[0].Env[5].Value},
			"sidecar env":   {a.Spec.Containers[1].Env[3].Value, b.Spec.Containers[1].Env[3].Value},
		} {
			if (pair[0] == pair[1]) != tc.same {
				t.Errorf("%s pods: %s %q and %q, want equal %v", tc.shape, what, pair[0], pair[1], tc.same)
			}
		}
	}
	if _, err := dataset.ParsePodShape("square"); err == nil {
		t.Error("ParsePodShape accepted an unknown shape")
	}
}

func TestMixedRatios(t *testing.T) {
	m := dataset.Mixed("ns", 10000)
	if m.Pods != 10000 || m.ConfigMaps != 2000 || m.Secrets != 1000 || m.Nodes != 100 || m.Widgets != 500 {
		t.Errorf("Mixed(10000) = %+v", m)
	}
	if small := dataset.Mixed("ns", 50); small.Nodes != 1 || small.Widgets != 2 {
		t.Errorf("Mixed(50) has %d nodes and %d widgets, want at least one of each", small.Nodes, small.Widgets)
	}
}

// TestDistinctPodsShareNothing checks what the distinct shape promises: no
// two Pods have a label value (beyond the dataset's and a few categories),
// an annotation value, a container name or image, or an env name or value in
// common, and Pod i is the same whenever it is made.
func TestDistinctPodsShareNothing(t *testing.T) {
	spec := dataset.Spec{Namespace: "ns", PodShape: dataset.PodsDistinct}
	now := time.Now()
	seen := map[string]int{}
	const n = 200
	for i := range n {
		p := dataset.NewPod(spec, i, now)
		var parts []string
		for k, v := range p.Labels {
			switch k {
			case dataset.LabelDataset, "team", "app.kubernetes.io/component", "app.kubernetes.io/part-of":
				continue // categories: a few values for all Pods
			}
			parts = append(parts, "label="+v)
		}
		for k, v := range p.Annotations {
			if k != dataset.LastAppliedAnnotation && !strings.HasPrefix(k, "prometheus.io/") {
				parts = append(parts, "annotation="+v)
			}
		}
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			parts = append(parts, "container="+c.Name)
			for _, e := range c.Env {
				if e.Value != "" {
					parts = append(parts, "env="+e.Name+"="+e.Value)
				}
			}
		}
		parts = append(parts, "image="+p.Spec.Containers[0].Image, "name="+p.Name)
		for _, part := range parts {
			if j, ok := seen[part]; ok && j != i {
				t.Fatalf("pods %d and %d share %s", j, i, part)
			}
			seen[part] = i
		}
	}
	a, b := dataset.NewPod(spec, 7, now), dataset.NewPod(spec, 7, now)
	a.Status.InitContainerStatuses, b.Status.InitContainerStatuses = nil, nil // container IDs are random
	a.Status.ContainerStatuses, b.Status.ContainerStatuses = nil, nil
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("pod 7 made twice differs (-first +second):\n%s", diff)
	}
}

// TestDistinctPodSize seeds distinct Pods and checks their size as the
// server returns them: about 19.7 KB of JSON, managedFields and last-applied
// included.
func TestDistinctPodSize(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	spec := dataset.Spec{Name: "distinct", Namespace: ns, Pods: 60, PodShape: dataset.PodsDistinct}
	if err := dataset.Seed(ctx, srv.Config, spec); err != nil {
		t.Fatal(err)
	}
	sizes, err := dataset.Measure(ctx, srv.Config, dataset.PodsGVR, ns, dataset.Selector(spec, dataset.PodsGVR))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("distinct pod sizes: %+v", sizes)
	if sizes.Count != 60 || sizes.JSON < 18_700 || sizes.JSON > 20_700 {
		t.Errorf("%d pods of %.0f bytes of JSON on average, want 60 of about 19,700", sizes.Count, sizes.JSON)
	}
	if sizes.Managers < 2 || sizes.ManagedFields < 3000 || sizes.LastApplied < 3000 {
		t.Errorf("sizes %+v: want managedFields of two managers and a last-applied annotation of several KB", sizes)
	}
}
