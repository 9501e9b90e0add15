package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// The kinds of informer a flavor can be, by the form its objects take.
const (
	kindTyped    = "typed"    // *corev1.Pod
	kindDynamic  = "dynamic"  // *unstructured.Unstructured
	kindMetadata = "metadata" // *metav1.PartialObjectMetadata
)

var kinds = []string{kindTyped, kindDynamic, kindMetadata}

// clients reach the server directly, not through the fault proxy: the
// writer's and the truth's. Each kind's truth comes from the client of that
// kind, so that the truth of a dynamic or metadata-only informer is what the
// server itself serves in that form, not a conversion of the harness's.
type clients struct {
	typed    kubernetes.Interface
	dynamic  dynamic.Interface
	metadata metadata.Interface
}

func newClients(cfg *rest.Config) (clients, error) {
	var c clients
	var err error
	if c.typed, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	c.metadata, err = metadata.NewForConfig(cfg)
	return c, err
}

// truthSet is the run's Pods as one fresh consistent LIST has them, in each
// kind's form: the typed LIST is consistent, and the dynamic and metadata
// LISTs read at its resourceVersion exactly.
type truthSet struct {
	rv     string
	keys   state                                 // key -> resourceVersion
	byKind map[string]map[string]kruntime.Object // kind -> key -> object
}

// listTruth lists the truth of the Pods that match selector.
func (c clients) listTruth(ctx context.Context, selector string) (truthSet, error) {
	t := truthSet{keys: state{}, byKind: map[string]map[string]kruntime.Object{}}
	typed, err := c.typed.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return t, fmt.Errorf("list pods: %w", err)
	}
	t.rv = typed.ResourceVersion
	t.byKind[kindTyped] = map[string]kruntime.Object{}
	for i := range typed.Items {
		p := &typed.Items[i]
		t.keys[key(p.Namespace, p.Name)] = p.ResourceVersion
		t.byKind[kindTyped][key(p.Namespace, p.Name)] = p
	}
	exact := metav1.ListOptions{LabelSelector: selector, ResourceVersion: t.rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	dyn, err := c.dynamic.Resource(podsGVR).List(ctx, exact)
	if err != nil {
		return t, fmt.Errorf("list pods with the dynamic client at resourceVersion %s: %w", t.rv, err)
	}
	t.byKind[kindDynamic] = map[string]kruntime.Object{}
	for i := range dyn.Items {
		u := &dyn.Items[i]
		t.byKind[kindDynamic][key(u.GetNamespace(), u.GetName())] = u
	}
	md, err := c.metadata.Resource(podsGVR).List(ctx, exact)
	if err != nil {
		return t, fmt.Errorf("list pods with the metadata client at resourceVersion %s: %w", t.rv, err)
	}
	t.byKind[kindMetadata] = map[string]kruntime.Object{}
	for i := range md.Items {
		m := &md.Items[i]
		t.byKind[kindMetadata][key(m.Namespace, m.Name)] = m
	}
	for _, k := range kinds[1:] {
		got := state{}
		for key, obj := range t.byKind[k] {
			m, _ := meta.Accessor(obj)
			got[key] = m.GetResourceVersion()
		}
		if d := t.keys.diff(got); d != "" {
			return t, fmt.Errorf("the %s LIST at resourceVersion %s differs from the typed one: %s", k, t.rv, d)
		}
	}
	return t, nil
}

// expected is what an informer of flavor f must hold for the server's
// object obj: a copy of obj with f's stripping applied, normalized.
func expected(f Flavor, obj kruntime.Object) kruntime.Object {
	c := obj.DeepCopyObject()
	if f.Library == "leanstore" {
		stripLean(c)
	}
	return normalized(c)
}

// stripLean removes from obj what every leanstore flavor of the run strips
// (see leanstoreOptions): managedFields, by default, and the last-applied
// annotation (WithStripLastApplied). The run adds no prune. It is written
// from the options' documentation, not from leanstore's code, so that a
// stripping defect cannot hide itself. An annotation map left empty is
// dropped: the API omits an empty map, so empty and absent are one state.
func stripLean(obj kruntime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetManagedFields(nil)
	ann := m.GetAnnotations()
	if _, ok := ann[leanstore.LastAppliedAnnotation]; !ok {
		return
	}
	kept := map[string]string{}
	for k, v := range ann {
		if k != leanstore.LastAppliedAnnotation {
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	m.SetAnnotations(kept)
}

// normalized clears, on a copy it owns, the one field the checks do not
// compare: the TypeMeta (apiVersion and kind) of typed and metadata-only
// objects. Whether a decoder fills it depends on the wire and the path, not
// on the object: client-go's protobuf decoding of a list item or a watch
// event leaves it empty, its JSON decoding fills it, and leanstore switches
// from protobuf to JSON when a server answers JSON (answer-json). No
// consumer of a typed or metadata-only informer reads it (a lister knows its
// type). Unstructured objects keep theirs: apiVersion and kind are fields of
// their content that dynamic consumers do read.
func normalized(obj kruntime.Object) kruntime.Object {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o
	case *metav1.PartialObjectMetadata:
		o.TypeMeta = metav1.TypeMeta{}
		return o
	}
	if a, err := meta.TypeAccessor(obj); err == nil {
		a.SetAPIVersion("")
		a.SetKind("")
	}
	return obj
}

// contentDiff compares an object an informer of flavor f holds (or handed
// its handlers) with the server's object: "" when they are semantically
// equal once f's stripping is applied to the server's, else a diff
// (-want +got). got is only read.
func contentDiff(f Flavor, truth, got kruntime.Object) string {
	return semanticDiff(expected(f, truth), normalized(got.DeepCopyObject()))
}

// semanticDiff is "" when want and got are equal by apimachinery's semantic
// equality (empty and nil maps and slices are equal, quantities compare by
// value, times by instant), else a diff (-want +got).
func semanticDiff(want, got kruntime.Object) string {
	if equality.Semantic.DeepEqual(want, got) {
		return ""
	}
	return objectDiff(want, got)
}

// objectDiff renders how got differs from want with cmp.Diff.
func objectDiff(want, got any) (out string) {
	defer func() {
		if r := recover(); r != nil { // a type cmp cannot walk: print both whole
			out = fmt.Sprintf("want: %+v\ngot:  %+v", want, got)
		}
	}()
	d := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }))
	if d == "" {
		d = fmt.Sprintf("(cmp sees no difference between %T and %T; apimachinery's semantic equality does)", want, got)
	}
	return d
}

// withResourceVersion is a copy of obj at resourceVersion rv.
func withResourceVersion(obj kruntime.Object, rv string) kruntime.Object {
	c := obj.DeepCopyObject()
	if m, err := meta.Accessor(c); err == nil {
		m.SetResourceVersion(rv)
	}
	return c
}

// contentFailures compares every object a subject holds, in its store and
// in what its handlers were last told, with the truth, and describes the
// first few that differ; after a subject's first failure, in one line.
func contentFailures(s *subject, t truthSet) []string {
	truth := t.byKind[s.flavor.Kind]
	var out []string
	brief := s.contentFailed
	check := func(where string, objs map[string]kruntime.Object) {
		keys := make([]string, 0, len(objs))
		for k := range objs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		bad := 0
		for _, k := range keys {
			want, ok := truth[k]
			if !ok {
				continue // the key checks report it
			}
			if d := contentDiff(s.flavor, want, objs[k]); d != "" {
				if bad++; bad <= 2 && !brief {
					m, _ := meta.Accessor(want)
					out = append(out, fmt.Sprintf("%s: %s %s at resourceVersion %s differs from the truth (-want +got):\n%s", s.flavor, where, k, m.GetResourceVersion(), indent(d)))
				}
			}
		}
		if bad > 2 || (brief && bad > 0) {
			out = append(out, fmt.Sprintf("%s: %s: %d objects differ from the truth in all", s.flavor, where, bad))
		}
	}
	stored := map[string]kruntime.Object{}
	for _, obj := range s.inf.GetStore().List() {
		if ro, ok := obj.(kruntime.Object); ok {
			if m, err := meta.Accessor(ro); err == nil {
				stored[key(m.GetNamespace(), m.GetName())] = ro
			}
		}
	}
	check("the store's", stored)
	if d := namespaceIndexDiff(s.inf.GetIndexer()); d != "" {
		out = append(out, fmt.Sprintf("%s: the namespace index differs from the store: %s", s.flavor, d))
	}
	if s.flavor.Encoded {
		// Gets fill the encoded store's hot cache, which Lists then read
		// from: a hot object kept past its version would show here, or in
		// the next step's List.
		byKey := map[string]kruntime.Object{}
		for k := range stored {
			obj, ok, err := s.inf.GetStore().GetByKey(k)
			if err != nil || !ok {
				out = append(out, fmt.Sprintf("%s: GetByKey(%q) of a listed key: exists %v, %v", s.flavor, k, ok, err))
				continue
			}
			byKey[k] = obj.(kruntime.Object)
		}
		check("the store's by key", byKey)
	}
	check("the handlers' last", s.rec.objects())
	s.contentFailed = s.contentFailed || len(out) > 0
	return out
}

// namespaceIndexDiff compares an informer's namespace index (what a lister's
// Pods(ns).List and ByIndex read) with its store: for every namespace the
// store holds objects of or the index has a value for, the index must give
// exactly the store's objects of it at the same resourceVersions (a namespace
// the store no longer holds must give none). The store is read before and after the index, and
// the two compared only when the store did not change in between. "" when
// they agree, or when the indexer has no namespace index.
func namespaceIndexDiff(idx cache.Indexer) string {
	if _, ok := idx.GetIndexers()[cache.NamespaceIndex]; !ok {
		return ""
	}
	versions := func(objs []any) map[string]string {
		out := make(map[string]string, len(objs))
		for _, obj := range objs {
			if m, err := meta.Accessor(obj); err == nil {
				out[key(m.GetNamespace(), m.GetName())] = m.GetResourceVersion()
			}
		}
		return out
	}
	for range 5 {
		before := versions(idx.List())
		byNamespace := map[string]map[string]string{}
		for k, rv := range before {
			ns, _, _ := strings.Cut(k, "/")
			if byNamespace[ns] == nil {
				byNamespace[ns] = map[string]string{}
			}
			byNamespace[ns][k] = rv
		}
		namespaces := slices.Concat(slices.Collect(maps.Keys(byNamespace)), idx.ListIndexFuncValues(cache.NamespaceIndex))
		slices.Sort(namespaces)
		namespaces = slices.Compact(namespaces)
		indexed := map[string]map[string]string{}
		for _, ns := range namespaces {
			objs, err := idx.ByIndex(cache.NamespaceIndex, ns)
			if err != nil {
				return fmt.Sprintf("ByIndex(%q, %q): %v", cache.NamespaceIndex, ns, err)
			}
			indexed[ns] = versions(objs)
		}
		if !maps.Equal(before, versions(idx.List())) {
			continue // the store changed while the index was read
		}
		for ns, got := range indexed {
			if want := byNamespace[ns]; !maps.Equal(want, got) {
				return fmt.Sprintf("namespace %s: the store holds %d objects, the index gives %d (%s)", ns, len(want), len(got), firstDifference(want, got))
			}
		}
		return ""
	}
	return "the store kept changing while its index was read"
}

// firstDifference names a key whose resourceVersion differs between want and
// got, or that only one of them has.
func firstDifference(want, got map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if rv, ok := got[k]; !ok || rv != want[k] {
			return fmt.Sprintf("%s at %s in the store, %q in the index", k, want[k], rv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			return fmt.Sprintf("%s in the index only", k)
		}
	}
	return ""
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
