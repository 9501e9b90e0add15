package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// demo changes the seeded Widgets the way a cluster would, a step every
// couple of seconds, so that the logs show each reason a reconcile runs:
//
//  1. widget-00000 was seeded with size 0: its reconcile failed permanently
//     and it waits. Fixing the spec (a new generation) runs it again.
//  2. Someone deletes widget-00001's ConfigMap: a related object changed,
//     and the controller puts it back.
//  3. Someone writes widget-00002's status: no reconcile (the predicate
//     filters status-only updates; the final log line counts it).
func demo(ctx context.Context, log *slog.Logger, cs kubernetes.Interface, dyn dynamic.Interface, ns string, synced func() bool) {
	for !synced() {
		if !pause(ctx, 100*time.Millisecond) {
			return
		}
	}
	widgets := dyn.Resource(dataset.WidgetGVR).Namespace(ns)
	steps := []struct {
		say string
		do  func() error
	}{
		{"demo: fixing widget-00000's spec (size 0 → 3)", func() error {
			_, err := widgets.Patch(ctx, "widget-00000", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{})
			return err
		}},
		{"demo: deleting widget-00001's ConfigMap", func() error {
			return cs.CoreV1().ConfigMaps(ns).Delete(ctx, "widget-00001-parts", metav1.DeleteOptions{})
		}},
		{"demo: writing widget-00002's status only", func() error {
			patch := fmt.Sprintf(`{"status":{"lastHeartbeat":%q}}`, time.Now().UTC().Format(time.RFC3339))
			_, err := widgets.Patch(ctx, "widget-00002", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
			return err
		}},
	}
	for _, s := range steps {
		if !pause(ctx, 2*time.Second) {
			return
		}
		log.Info(s.say)
		if err := s.do(); err != nil {
			log.Error("demo step failed", "step", s.say, "error", err)
		}
	}
	if pause(ctx, 2*time.Second) {
		log.Info("demo: done; the controller keeps running until interrupted")
	}
}

// pause waits d or until ctx ends; false if ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
