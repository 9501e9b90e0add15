package leanstore

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestPacedIndexersKeepTheirValuesAndTickOncePerObject: the index functions
// leanstore gives client-go (pacedIndexers) have the caller's names and
// give the caller's values and errors; client-go's indexer calls each of them
// for every object it stores, and the heap bound's tick runs once per object.
func TestPacedIndexersKeepTheirValuesAndTickOncePerObject(t *testing.T) {
	errNoApp := errors.New("no app label")
	indexers := cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"app": func(obj any) ([]string, error) {
			app, ok := obj.(metav1.Object).GetLabels()["app"]
			if !ok {
				return nil, errNoApp
			}
			return []string{app}, nil
		},
		"images": func(obj any) ([]string, error) {
			var images []string
			for _, c := range obj.(*corev1.Pod).Spec.Containers {
				images = append(images, c.Image)
			}
			return images, nil
		},
	}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", Labels: map[string]string{"app": "shop"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "x:1"}, {Image: "y:2"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "q"}},
	}
	// store calls every index function on every pod, as client-go's indexer
	// does, and checks what each returns; it returns the ticks.
	store := func(t *testing.T, given cache.Indexers) int {
		ticks := 0
		paced := pacedIndexers(given, func() { ticks++ })
		if got, want := slices.Sorted(maps.Keys(paced)), slices.Sorted(maps.Keys(given)); !slices.Equal(got, want) {
			t.Fatalf("index names %v, want %v", got, want)
		}
		for _, pod := range pods {
			for name, f := range paced {
				got, err := f(pod)
				want, wantErr := given[name](pod)
				if !reflect.DeepEqual(got, want) || !errors.Is(err, wantErr) {
					t.Errorf("%s of %s/%s: %q, %v; want %q, %v", name, pod.Namespace, pod.Name, got, err, want, wantErr)
				}
			}
		}
		return ticks
	}
	// Each function alone, so that each is the one that ticks.
	for name, f := range indexers {
		t.Run(name, func(t *testing.T) {
			if ticks := store(t, cache.Indexers{name: f}); ticks != len(pods) {
				t.Errorf("%d ticks for %d objects, want one per object", ticks, len(pods))
			}
		})
	}
	if ticks := store(t, indexers); ticks != len(pods) {
		t.Errorf("%d ticks for %d objects with %d indexes, want one per object", ticks, len(pods), len(indexers))
	}
	ticks := 0
	if got := pacedIndexers(nil, func() { ticks++ }); got != nil {
		t.Errorf("no indexers paced into %v", got)
	}
}
