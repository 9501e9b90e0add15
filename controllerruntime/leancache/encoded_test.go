package leancache_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cachetune/cachetune/controllerruntime/leancache"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// TestEncodedStore: a cache whose Leanstore options select the encoded store
// keeps every kind of informer controller-runtime makes (typed, a custom
// resource's own Go type, unstructured, metadata-only) encoded, serves Get and
// List from it stripped, and hands out objects the caller owns even with
// UnsafeDisableDeepCopy: a change to one read does not reach the next.
func TestEncodedStore(t *testing.T) {
	leakcheck.Check(t)
	direct, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, direct)
	mustCreate(t, direct,
		&corev1.ConfigMap{ObjectMeta: withLastApplied(metav1.ObjectMeta{Name: "a", Namespace: ns}), Data: map[string]string{"k": "v"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}},
		&Gadget{ObjectMeta: withLastApplied(metav1.ObjectMeta{Name: "g1", Namespace: ns}), Spec: GadgetSpec{Color: "red", Size: 1}},
		&Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g2", Namespace: ns}, Spec: GadgetSpec{Color: "blue", Size: 2}},
	)
	lean := leancache.New(leancache.Options{DisableMetrics: true, Leanstore: []leanstore.Option{
		leanstore.WithStripLastApplied(), leanstore.WithEncodedStore(leanstore.EncodedStore{}),
	}})
	c, err := lean.NewCache(cfg, cache.Options{
		Scheme:                       newScheme(),
		DefaultNamespaces:            map[string]cache.Config{ns: {}},
		DefaultUnsafeDisableDeepCopy: new(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { _ = c.Start(ctx) })

	gadgetU := &unstructured.Unstructured{}
	gadgetU.SetGroupVersionKind(gadgetGV.WithKind("Gadget"))
	cmMeta := &metav1.PartialObjectMetadata{}
	cmMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	for _, tc := range []struct {
		name  string
		obj   client.Object
		list  client.ObjectList
		key   string
		names []string
	}{
		{"typed", &corev1.ConfigMap{}, &corev1.ConfigMapList{}, "a", []string{ns + "/a", ns + "/b"}},
		{"custom resource", &Gadget{}, &GadgetList{}, "g1", []string{ns + "/g1", ns + "/g2"}},
		{"unstructured", gadgetU, listOf(gadgetU), "g1", []string{ns + "/g1", ns + "/g2"}},
		{"metadata-only", cmMeta, &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}}, "a", []string{ns + "/a", ns + "/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			waitFor(t, "the informer's objects", func() (bool, error) {
				list := tc.list.DeepCopyObject().(client.ObjectList)
				if err := c.List(ctx, list); err != nil {
					return false, nil
				}
				return slices.Equal(names(t, list), tc.names), nil
			})
			for range 3 {
				got := tc.obj.DeepCopyObject().(client.Object)
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.key}, got); err != nil {
					t.Fatal(err)
				}
				if got.GetAnnotations()[lastApplied] != "" || got.GetAnnotations()["keep"] != "me" {
					t.Fatalf("annotations %v: want last-applied stripped and the others kept", got.GetAnnotations())
				}
				if got.GetLabels()["mutated"] != "" {
					t.Fatal("a change to an object read before reached the cache")
				}
				got.SetLabels(map[string]string{"mutated": "yes"})
			}
		})
	}
	st := lean.Status()
	if len(st) != 4 {
		t.Fatalf("%d informers, want 4 (typed, custom resource, unstructured, metadata-only)", len(st))
	}
	for _, s := range st {
		if s.Encoded == nil || s.Encoded.Objects != 2 {
			t.Errorf("%s: Status().Encoded = %+v, want an encoded store of 2 objects", s.Informer, s.Encoded)
		}
	}
}

func listOf(u *unstructured.Unstructured) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(u.GroupVersionKind().GroupVersion().WithKind(u.GetKind() + "List"))
	return l
}
