package predicate_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/predicate"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

// counter counts the raw events an informer delivers, to know when the script
// has been seen in full.
type counter struct{ adds, updates, deletes atomic.Int64 }

func (c *counter) OnAdd(any, bool)   { c.adds.Add(1) }
func (c *counter) OnUpdate(_, _ any) { c.updates.Add(1) }
func (c *counter) OnDelete(any)      { c.deletes.Add(1) }

// suite is one set of predicates watching one informer.
type suite struct {
	raw     counter
	ps      map[string]*predicate.Counted
	reached map[string]*counter // events that reached a handler behind each predicate
}

func newSuite(inf cache.SharedIndexInformer, t *testing.T) *suite {
	s := &suite{
		ps: map[string]*predicate.Counted{
			"generation":       predicate.GenerationChanged(),
			"finalizers":       predicate.FinalizersChanged(),
			"labels":           predicate.LabelsChanged(),
			"annotations":      predicate.AnnotationsChanged(),
			"resource-version": predicate.ResourceVersionChanged(),
			"deletion-started": predicate.DeletionStarted(),
		},
		reached: map[string]*counter{},
	}
	s.ps["any(generation,finalizers)"] = predicate.Any(predicate.GenerationChanged(), predicate.FinalizersChanged())
	s.ps["all(resource-version,not(labels))"] = predicate.All(predicate.ResourceVersionChanged(), predicate.Not(predicate.LabelsChanged()))
	if _, err := inf.AddEventHandler(&s.raw); err != nil {
		t.Fatal(err)
	}
	for name, p := range s.ps {
		if p.Name() != name {
			t.Fatalf("predicate named %q, want %q", p.Name(), name)
		}
		c := &counter{}
		s.reached[name] = c
		if _, err := inf.AddEventHandler(predicate.Handler(p, c)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestScriptedEvents drives one Widget through its life while a dynamic
// informer (unstructured objects) and a metadata informer
// (PartialObjectMetadata) watch it, and checks every predicate's counters
// exactly: both informers must agree.
func TestScriptedEvents(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver (not started with -short)")
	}
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if err := dataset.EnsureWidgetCRD(ctx, dyn); err != nil {
		t.Fatal(err)
	}

	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	metaFactory := metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(srv.Config), 0, ns, nil)
	suites := map[string]*suite{
		"unstructured": newSuite(dynFactory.ForResource(dataset.WidgetGVR).Informer(), t),
		"partial":      newSuite(metaFactory.ForResource(dataset.WidgetGVR).Informer(), t),
	}
	stop := make(chan struct{})
	dynFactory.Start(stop)
	metaFactory.Start(stop)
	defer func() {
		close(stop)
		dynFactory.Shutdown()
		metaFactory.Shutdown()
	}()
	for gvr, ok := range dynFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("dynamic informer for %v did not sync", gvr)
		}
	}
	for gvr, ok := range metaFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("metadata informer for %v did not sync", gvr)
		}
	}

	res := dyn.Resource(dataset.WidgetGVR).Namespace(ns)
	const name = "scripted"
	patch := func(what, body string, subresources ...string) {
		t.Helper()
		if _, err := res.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}, subresources...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.cachetune.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"tier": "a"}},
		"spec":     map[string]any{"size": int64(1), "color": "red"},
	}}
	if _, err := res.Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch("status-only update", `{"status":{"phase":"Ready"}}`, "status")
	patch("label change", `{"metadata":{"labels":{"tier":"b"}}}`)
	patch("annotation change", `{"metadata":{"annotations":{"note":"hello"}}}`)
	patch("finalizer add", `{"metadata":{"finalizers":["cachetune.dev/hold"]}}`)
	patch("spec change", `{"spec":{"size":2}}`)
	if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil { // deletion starts: held by the finalizer
		t.Fatal(err)
	}
	patch("finalizer removal", `{"metadata":{"finalizers":null}}`) // the server deletes it now

	for kind, s := range suites {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return s.raw.deletes.Load() == 1, nil
		})
		if err != nil {
			t.Fatalf("%s informer: delete not seen", kind)
		}
		if a, u := s.raw.adds.Load(), s.raw.updates.Load(); a != 1 || u != 6 {
			t.Fatalf("%s informer delivered %d adds and %d updates, want 1 and 6", kind, a, u)
		}
		// Each handler has its own listener: the raw one's delete says
		// nothing of the others. A listener hands events in order, so a
		// predicate that decided on the delete has decided on all before it.
		err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			for name, p := range s.ps {
				d := p.Stats().Delete
				if d.Passed+d.Filtered != 1 || uint64(s.reached[name].deletes.Load()) != d.Passed {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s informer: not every predicate's handler was handed the delete", kind)
		}
	}

	// The six updates, in order: status, label, annotation, finalizer add, spec
	// (generation 1→2), deletion start (generation 2→3: the server bumps it when
	// it sets deletionTimestamp). The final removal of the finalizer is the delete.
	c := func(p, f uint64) predicate.Counts { return predicate.Counts{Passed: p, Filtered: f} }
	change := func(updatesPassed uint64) predicate.Stats {
		return predicate.Stats{Create: c(1, 0), Update: c(updatesPassed, 6-updatesPassed), Delete: c(1, 0)}
	}
	want := map[string]predicate.Stats{
		"generation":                        change(2), // spec, deletion start
		"finalizers":                        change(1), // finalizer add
		"labels":                            change(1),
		"annotations":                       change(1),
		"resource-version":                  change(6),
		"deletion-started":                  {Create: c(0, 1), Update: c(1, 5), Delete: c(1, 0)},
		"any(generation,finalizers)":        change(3),
		"all(resource-version,not(labels))": {Create: c(0, 1), Update: c(5, 1), Delete: c(0, 1)},
	}
	for kind, s := range suites {
		got := map[string]predicate.Stats{}
		reached := map[string]predicate.Stats{}
		for name, p := range s.ps {
			got[name] = p.Stats()
			r := s.reached[name]
			reached[name] = predicate.Stats{
				Create: c(uint64(r.adds.Load()), 0), Update: c(uint64(r.updates.Load()), 0), Delete: c(uint64(r.deletes.Load()), 0)}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s informer: predicate counters (-want +got):\n%s", kind, diff)
		}
		// What reached each handler is exactly what its predicate passed.
		passed := map[string]predicate.Stats{}
		for name, st := range want {
			passed[name] = predicate.Stats{Create: c(st.Create.Passed, 0), Update: c(st.Update.Passed, 0), Delete: c(st.Delete.Passed, 0)}
		}
		if diff := cmp.Diff(passed, reached); diff != "" {
			t.Errorf("%s informer: events reaching handlers (-want +got):\n%s", kind, diff)
		}
	}
}
