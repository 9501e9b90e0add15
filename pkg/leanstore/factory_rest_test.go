package leanstore_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// widget is a Go type for pkg/testkit/dataset's Widget custom resource, as an operator
// would declare it: not in client-go's scheme, served as JSON only.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec,omitempty"`
}

type widgetSpec struct {
	Size  int    `json:"size,omitempty"`
	Color string `json:"color,omitempty"`
}

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	m := w.ObjectMeta
	m.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (l *widgetList) DeepCopyObject() runtime.Object {
	out := *l
	m := l.ListMeta
	m.DeepCopyInto(&out.ListMeta)
	out.Items = make([]widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*widget)
	}
	return &out
}

// widgetClient returns a REST client that decodes Widgets into the Go types
// above, as controller-runtime builds one from a manager's scheme.
func widgetClient(t *testing.T) rest.Interface {
	t.Helper()
	gv := dataset.WidgetGVR.GroupVersion()
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gv.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(gv.WithKind("WidgetList"), &widgetList{})
	metav1.AddToGroupVersion(s, gv)
	cfg := rest.CopyConfig(srv.Config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func applyWidget(t *testing.T, ctx context.Context, dyn dynamic.Interface, ns, name, color string, size int) {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.cachetune.dev/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "labels": map[string]any{"color": color},
			"annotations": map[string]any{leanstore.LastAppliedAnnotation: `{"kind":"Widget"}`},
		},
		"spec": map[string]any{"size": int64(size), "color": color},
	}}
	if _, err := dyn.Resource(dataset.WidgetGVR).Namespace(ns).Apply(ctx, name, w, metav1.ApplyOptions{FieldManager: "test", Force: true}); err != nil {
		t.Fatal(err)
	}
}

// runInformer runs inf until the test ends and waits for it to sync.
func runInformer(t *testing.T, ctx context.Context, inf cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
}

func cachedWidgets(store cache.Store) []string {
	var out []string
	for _, obj := range store.List() {
		w, ok := obj.(*widget)
		if !ok {
			out = append(out, fmt.Sprintf("%T", obj))
			continue
		}
		extra := ""
		if len(w.ManagedFields) > 0 {
			extra += " managedFields"
		}
		if _, ok := w.Annotations[leanstore.LastAppliedAnnotation]; ok {
			extra += " last-applied"
		}
		out = append(out, fmt.Sprintf("%s/%s %s %d%s", w.Namespace, w.Name, w.Spec.Color, w.Spec.Size, extra))
	}
	sort.Strings(out)
	return out
}

// TestRESTInformerCustomResource: an informer of a CRD's own Go type, decoded
// from JSON, scoped by namespace and label selector, stripped, and kept current
// by the watch, listed by a streaming list and by a paged LIST.
func TestRESTInformerCustomResource(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver, which -short does not start")
	}
	for _, mode := range []leanstore.StreamingMode{leanstore.StreamingOn, leanstore.StreamingOff} {
		t.Run("streaming="+mode.String(), func(t *testing.T) { testRESTInformerCustomResource(t, mode) })
	}
}

func testRESTInformerCustomResource(t *testing.T, mode leanstore.StreamingMode) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if err := dataset.EnsureWidgetCRD(ctx, dyn); err != nil {
		t.Fatal(err)
	}
	ns, other := srv.NewNamespace(t), srv.NewNamespace(t)
	applyWidget(t, ctx, dyn, ns, "a", "red", 1)
	applyWidget(t, ctx, dyn, ns, "b", "blue", 2)
	applyWidget(t, ctx, dyn, other, "c", "red", 3)

	reg := prometheus.NewPedanticRegistry()
	inf, err := leanstore.NewRESTInformer(widgetClient(t), dataset.WidgetGVR, true, &widget{}, 0, nil,
		leanstore.WithNamespace(ns), leanstore.WithLabelSelector("color=red"),
		leanstore.WithStripLastApplied(), leanstore.WithName("crd-test"), leanstore.WithMetrics(reg),
		leanstore.WithStreamingLists(mode))
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, ctx, inf)
	if got, want := cachedWidgets(inf.GetStore()), []string{ns + "/a red 1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cached %v, want %v", got, want)
	}

	applyWidget(t, ctx, dyn, ns, "a", "red", 10)
	applyWidget(t, ctx, dyn, ns, "d", "red", 4)
	applyWidget(t, ctx, dyn, other, "e", "red", 5)
	want := []string{ns + "/a red 10", ns + "/d red 4"}
	waitFor(t, ctx, "the watch's changes", func() bool { return fmt.Sprint(cachedWidgets(inf.GetStore())) == fmt.Sprint(want) })

	st := inf.Status()
	wantPath := leanstore.ListPathStreaming
	if mode == leanstore.StreamingOff {
		wantPath = leanstore.ListPathPaged
	}
	if st.Informer != "crd-test/widgets.bench.cachetune.dev" || st.Wire != string(leanstore.WireJSON) || !st.Synced || st.ListPath != wantPath {
		t.Errorf("status = %+v, want informer crd-test/widgets.bench.cachetune.dev, wire json, synced, list path %s", st, wantPath)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var objects float64 = -1
	for _, mf := range mfs {
		if mf.GetName() == "cachetune_leanstore_objects" && len(mf.Metric) == 1 {
			objects = mf.Metric[0].GetGauge().GetValue()
		}
	}
	if objects != 2 {
		t.Errorf("cachetune_leanstore_objects = %v, want 2", objects)
	}
}

// TestRESTInformerBuiltIn: a type of client-go's scheme goes through the lean
// protobuf decoder, whatever the REST client's own content type.
func TestRESTInformerBuiltIn(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, time.Minute)
	ns := srv.NewNamespace(t)
	cs := srv.Clientset()
	for _, name := range []string{"x", "y"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	inf, err := leanstore.NewRESTInformer(cs.CoreV1().RESTClient(), gvr, true, &corev1.ConfigMap{}, 0, nil, leanstore.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, ctx, inf)
	var got []string
	for _, obj := range inf.GetStore().List() {
		cm := obj.(*corev1.ConfigMap)
		got = append(got, fmt.Sprintf("%s=%s managedFields=%d", cm.Name, cm.Data["k"], len(cm.ManagedFields)))
	}
	sort.Strings(got)
	if want := []string{"x=x managedFields=0", "y=y managedFields=0"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cached %v, want %v", got, want)
	}
	if st := inf.Status(); st.Wire != string(leanstore.WireProtobuf) || st.Informer != "leanstore/configmaps" {
		t.Errorf("status = %+v, want wire protobuf, informer leanstore/configmaps", st)
	}
}

func TestRESTInformerBadInput(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver, which -short does not start")
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	rc := srv.Clientset().CoreV1().RESTClient()
	var nilClient *rest.RESTClient
	reg := prometheus.NewRegistry()
	if _, err := leanstore.NewRESTInformer(rc, gvr, true, &corev1.ConfigMap{}, 0, nil, leanstore.WithName("twice"), leanstore.WithMetrics(reg)); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() (*leanstore.Informer, error){
		"nil client": func() (*leanstore.Informer, error) {
			return leanstore.NewRESTInformer(nilClient, gvr, true, &corev1.ConfigMap{}, 0, nil)
		},
		"no resource": func() (*leanstore.Informer, error) {
			return leanstore.NewRESTInformer(rc, schema.GroupVersionResource{}, true, &corev1.ConfigMap{}, 0, nil)
		},
		"not a pointer": func() (*leanstore.Informer, error) { return leanstore.NewRESTInformer(rc, gvr, true, nil, 0, nil) },
		"metrics collision": func() (*leanstore.Informer, error) {
			return leanstore.NewRESTInformer(rc, gvr, true, &corev1.ConfigMap{}, 0, nil, leanstore.WithName("twice"), leanstore.WithMetrics(reg))
		},
	} {
		if inf, err := call(); err == nil || inf != nil {
			t.Errorf("%s: got %v, %v; want an error", name, inf, err)
		}
	}
}
