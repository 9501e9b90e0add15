package resilience

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// writer creates, updates and deletes objects at a steady rate, straight to
// the server (not through the proxy), keeping their number near a target.
type writer struct {
	client  dynamic.ResourceInterface
	newObj  func(name string) *unstructured.Unstructured
	target  int
	rate    float64
	mu      sync.Mutex
	names   []string
	seq     int
	ops     map[string]int
	errs    int
	lastErr error
}

func newWriter(dc dynamic.Interface, gvr schema.GroupVersionResource, ns string, newObj func(string) *unstructured.Unstructured, target int, rate float64) *writer {
	return &writer{client: dc.Resource(gvr).Namespace(ns), newObj: newObj, target: target, rate: rate, ops: map[string]int{}}
}

// seed creates the initial objects.
func (w *writer) seed(ctx context.Context) error {
	for range w.target {
		if err := w.create(ctx); err != nil {
			return err
		}
	}
	return nil
}

// run writes until ctx ends.
func (w *writer) run(ctx context.Context) {
	t := time.NewTicker(time.Duration(float64(time.Second) / w.rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		op := w.pick()
		switch op {
		case "create":
			err = w.create(ctx)
		case "update":
			err = w.update(ctx)
		case "delete":
			err = w.delete(ctx)
		}
		w.mu.Lock()
		w.ops[op]++
		if err != nil && ctx.Err() == nil {
			w.errs++
			w.lastErr = err
		}
		w.mu.Unlock()
	}
}

// pick chooses the next operation: updates mostly, creates and deletes
// keeping the count within a tenth of the target.
func (w *writer) pick() string {
	w.mu.Lock()
	n := len(w.names)
	w.mu.Unlock()
	switch r := rand.Float64(); {
	case n < w.target*9/10 || (r < 0.3 && n < w.target*11/10):
		return "create"
	case n > w.target*11/10 || (r < 0.6 && n > 0):
		return "delete"
	default:
		return "update"
	}
}

func (w *writer) create(ctx context.Context) error {
	w.mu.Lock()
	w.seq++
	name := fmt.Sprintf("obj-%05d", w.seq)
	w.mu.Unlock()
	if _, err := w.client.Create(ctx, w.newObj(name), metav1.CreateOptions{}); err != nil {
		return err
	}
	w.mu.Lock()
	w.names = append(w.names, name)
	w.mu.Unlock()
	return nil
}

func (w *writer) random() (string, int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.names) == 0 {
		return "", 0, false
	}
	i := rand.IntN(len(w.names))
	return w.names[i], i, true
}

func (w *writer) update(ctx context.Context) error {
	name, _, ok := w.random()
	if !ok {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"cachetune.dev/generation":"%d"}}}`, time.Now().UnixNano())
	_, err := w.client.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

func (w *writer) delete(ctx context.Context) error {
	name, i, ok := w.random()
	if !ok {
		return nil
	}
	w.mu.Lock()
	if i < len(w.names) && w.names[i] == name {
		w.names = append(w.names[:i], w.names[i+1:]...)
	}
	w.mu.Unlock()
	return w.client.Delete(ctx, name, metav1.DeleteOptions{})
}

func (w *writer) stats() (ops map[string]int, errs int, last error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ops = map[string]int{}
	for k, v := range w.ops {
		ops[k] = v
	}
	return ops, w.errs, w.lastErr
}

// configMap is the default object: a ConfigMap with about 1 KB of data.
func configMap(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"app": "resilience"}},
		"data":       map[string]any{"payload": fmt.Sprintf("%01024d", 0)},
	}}
}
