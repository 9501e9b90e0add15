package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/reconcile"
	"github.com/cachetune/cachetune/pkg/retry"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// managedBy labels the ConfigMaps this controller owns, so that its
// ConfigMap informer caches those and nothing else.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "widget-controller"
	widgetLabel    = "bench.cachetune.dev/widget"
)

// callTimeout bounds each API call a reconcile makes: one slow call must not
// hold a worker, or a stalled server would stop every key behind it.
const callTimeout = 10 * time.Second

var palette = map[string]bool{"red": true, "green": true, "blue": true}

// controller assembles Widgets: each valid Widget gets a "<name>-parts"
// ConfigMap that lists what it is made of, and condition Ready=True for the
// generation it assembled.
type controller struct {
	widgets    cache.GenericLister
	parts      corelisters.ConfigMapLister
	cs         kubernetes.Interface
	namespaced func(ns string) dynamic.ResourceInterface
}

func newController(widgets cache.GenericLister, parts corelisters.ConfigMapLister, cs kubernetes.Interface, dyn dynamic.Interface) *controller {
	return &controller{
		widgets: widgets, parts: parts, cs: cs,
		namespaced: func(ns string) dynamic.ResourceInterface { return dyn.Resource(dataset.WidgetGVR).Namespace(ns) },
	}
}

// spec is what the controller reads from a Widget.
type spec struct {
	size, replicas int64
	color          string
	parts          int
}

// parse validates a Widget's spec. What it rejects is permanent: retrying
// cannot help until someone changes the spec.
func parse(key cache.ObjectName, w *unstructured.Unstructured) (spec, error) {
	invalid := func(format string, args ...any) (spec, error) {
		return spec{}, failure.Reconcile(failure.InvalidSpec, key.String(), fmt.Errorf(format, args...))
	}
	var s spec
	var found bool
	var err error
	if s.size, found, err = unstructured.NestedInt64(w.Object, "spec", "size"); err != nil || !found {
		return invalid("missing spec field: size")
	}
	if s.size < 1 {
		return invalid("spec.size must be at least 1, got %d", s.size)
	}
	s.color, _, _ = unstructured.NestedString(w.Object, "spec", "color")
	if !palette[s.color] {
		return invalid("spec.color %q is not one of red, green, blue", s.color)
	}
	s.replicas, _, _ = unstructured.NestedInt64(w.Object, "spec", "replicas")
	parts, _, _ := unstructured.NestedSlice(w.Object, "spec", "parts")
	s.parts = len(parts)
	return s, nil
}

// reconcile is the loop's Func.
func (c *controller) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, err := c.widgets.ByNamespace(req.Key.Namespace).Get(req.Key.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil // deleted; its ConfigMap goes with it (owner reference)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	w := obj.(*unstructured.Unstructured)
	s, err := parse(req.Key, w)
	if err != nil {
		return reconcile.Result{}, err // permanent: the loop records it on the status and waits
	}
	if err := c.ensureParts(ctx, w, s); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, c.writeStatus(ctx, w, s)
}

// ensureParts creates or repairs the Widget's ConfigMap.
func (c *controller) ensureParts(ctx context.Context, w *unstructured.Unstructured, s spec) error {
	name := w.GetName() + "-parts"
	want := map[string]string{
		"size": strconv.FormatInt(s.size, 10), "color": s.color,
		"replicas": strconv.FormatInt(s.replicas, 10), "parts": strconv.Itoa(s.parts),
	}
	cms := c.cs.CoreV1().ConfigMaps(w.GetNamespace())
	call := fmt.Sprintf("configmap %s/%s", w.GetNamespace(), name)

	cm, err := c.parts.ConfigMaps(w.GetNamespace()).Get(name)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: w.GetNamespace(),
				Labels: map[string]string{managedByLabel: managedBy, widgetLabel: w.GetName()},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: w.GetAPIVersion(), Kind: w.GetKind(), Name: w.GetName(), UID: w.GetUID(),
					Controller: ptr(true), BlockOwnerDeletion: ptr(true),
				}},
			},
			Data: want,
		}
		err = retry.CallWithTimeout(ctx, callTimeout, "create "+call, func(ctx context.Context) error {
			_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Our cache has not seen it yet: read it and compare below.
		cm, err = retry.ValueWithTimeout(ctx, callTimeout, "get "+call, func(ctx context.Context) (*corev1.ConfigMap, error) {
			return cms.Get(ctx, name, metav1.GetOptions{})
		})
	}
	if err != nil {
		return err
	}
	if maps.Equal(cm.Data, want) {
		return nil // no write, no event, no next reconcile
	}
	cm = cm.DeepCopy()
	cm.Data = want
	// A conflict here (someone else wrote it) is transient: retried promptly.
	return retry.CallWithTimeout(ctx, callTimeout, "update "+call, func(ctx context.Context) error {
		_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// writeStatus records the assembled generation, writing only when it changes
// something: a status derived from the spec alone cannot start a loop.
func (c *controller) writeStatus(ctx context.Context, w *unstructured.Unstructured, s spec) error {
	w = w.DeepCopy()
	gen := w.GetGeneration()
	phase, _, _ := unstructured.NestedString(w.Object, "status", "phase")
	observed, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
	changed := reconcile.SetCondition(w, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Assembled",
		Message:            fmt.Sprintf("%d parts, %s", s.parts, s.color),
		ObservedGeneration: gen,
	})
	if !changed && phase == "Assembled" && observed == gen {
		return nil
	}
	_ = unstructured.SetNestedField(w.Object, "Assembled", "status", "phase")
	_ = unstructured.SetNestedField(w.Object, gen, "status", "observedGeneration")
	return retry.CallWithTimeout(ctx, callTimeout, "update status of widget "+w.GetNamespace()+"/"+w.GetName(), func(ctx context.Context) error {
		_, err := c.namespaced(w.GetNamespace()).UpdateStatus(ctx, w, metav1.UpdateOptions{})
		return err
	})
}

func ptr[T any](v T) *T { return &v }
