package reconcile

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cachetune/cachetune/pkg/failure"
)

// maxMessage bounds a condition message: an error that quotes a whole object
// must not bloat the status (and every cache that holds it).
const maxMessage = 1024

// SetCondition sets c in status.conditions of u, in the shape of
// metav1.Condition, and reports whether anything changed. The
// lastTransitionTime moves only when the status changes (it is set to now
// when c has none), so writing the same condition twice changes nothing: a
// controller that writes status only when SetCondition reports a change
// cannot loop on its own writes.
func SetCondition(u *unstructured.Unstructured, c metav1.Condition) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(time.Now())
	}
	want := map[string]any{
		"type":               c.Type,
		"status":             string(c.Status),
		"reason":             c.Reason,
		"message":            c.Message,
		"lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
	}
	if c.ObservedGeneration != 0 {
		want["observedGeneration"] = c.ObservedGeneration
	}
	for i, raw := range conds {
		old, ok := raw.(map[string]any)
		if !ok || old["type"] != c.Type {
			continue
		}
		if old["status"] == want["status"] {
			if t, ok := old["lastTransitionTime"]; ok {
				want["lastTransitionTime"] = t
			}
			if old["reason"] == want["reason"] && old["message"] == want["message"] &&
				int64Of(old["observedGeneration"]) == c.ObservedGeneration {
				return false
			}
		}
		conds[i] = want
		_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
		return true
	}
	_ = unstructured.SetNestedSlice(u.Object, append(conds, want), "status", "conditions")
	return true
}

// int64Of reads a JSON number as decoded into an unstructured object.
func int64Of(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

// ConditionHook returns a Hook, for WithOnPermanent, that records a
// permanent failure on the object's status through the status subresource
// of resource gvr: condition conditionType with status False, the failure's
// cause as reason (InvalidSpec, NotFound, Forbidden, ...), the error as
// message and the failed generation as observedGeneration. It writes with
// the object's resourceVersion and, on a conflict, reads the object again,
// up to three times; a deleted object is not an error. Nothing is written
// when the condition already says the same.
func ConditionHook(client dynamic.Interface, gvr schema.GroupVersionResource, conditionType string) Hook {
	return func(ctx context.Context, f Failure) error {
		res := client.Resource(gvr).Namespace(f.Key.Namespace)
		reason := f.Class.Cause
		if reason == "" || reason == failure.Unknown {
			reason = f.Class.Reason
		}
		msg := f.Err.Error()
		if len(msg) > maxMessage {
			msg = msg[:maxMessage-3] + "..."
		}
		cond := metav1.Condition{
			Type: conditionType, Status: metav1.ConditionFalse, Reason: string(reason),
			Message: msg, ObservedGeneration: f.Generation,
		}
		var obj *unstructured.Unstructured
		if u, ok := f.Object.(*unstructured.Unstructured); ok {
			obj = u.DeepCopy()
		}
		var err error
		for range 3 {
			if obj == nil {
				obj, err = res.Get(ctx, f.Key.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("record condition %s on %s %s: %w", conditionType, gvr.Resource, f.Key, err)
				}
			}
			if !SetCondition(obj, cond) {
				return nil
			}
			_, err = res.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
			switch {
			case err == nil, apierrors.IsNotFound(err):
				return nil
			case !apierrors.IsConflict(err):
				return fmt.Errorf("record condition %s on %s %s: %w", conditionType, gvr.Resource, f.Key, err)
			}
			obj = nil // stale: read it again
		}
		return fmt.Errorf("record condition %s on %s %s: %w", conditionType, gvr.Resource, f.Key, err)
	}
}
