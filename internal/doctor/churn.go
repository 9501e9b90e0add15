package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/cachetune/cachetune/pkg/diagnose"
)

// churnMaxObjects caps the objects whose latest version the watch keeps, to
// compare the next update with: the churn detector's own default cap.
const churnMaxObjects = 5000

// churnHistory is how many updates per object the detector keeps: enough to
// count a whole short watch's rewrites (the default keeps 1.5 times the loop
// threshold, which would report "7 updates" for a loop of 40). 24 bytes each,
// for at most churnMaxObjects objects.
const churnHistory = 64

// churnSettings scales the churn detector's defaults (20 updates in 2 minutes
// for a loop) to a watch of d: the window is the watch, and a loop is the
// same rate of rewrites, never fewer than 5.
func churnSettings(d time.Duration) (window time.Duration, loop, pingPong int) {
	loop = max(5, int(20*d/(2*time.Minute)))
	return d, loop, 4
}

// churn watches t for d with a plain watch (full objects, managedFields
// included: the detector needs them to name managers) and feeds every update
// to a diagnose.ChurnDetector. The first update of an object seen during the
// watch only records it: the watch starts now, without a list, so that it
// costs nothing on a large resource.
func churn(ctx context.Context, dyn dynamic.Interface, t target, namespace string, d time.Duration) *Churn {
	if !t.namespaced {
		namespace = ""
	}
	window, loop, turns := churnSettings(d)
	c := &Churn{Seconds: d.Seconds()}
	reg := prometheus.NewPedanticRegistry() // where the detector exports its update counts
	det, err := diagnose.NewChurnDetector(diagnose.WithResource(t.name()), diagnose.WithWindow(window),
		diagnose.WithLoopThreshold(loop), diagnose.WithPingPongTurns(turns), diagnose.WithRetention(2*d),
		diagnose.WithHistory(max(churnHistory, loop+loop/2)), diagnose.WithMetrics(reg))
	if err != nil {
		c.Error = err.Error()
		return c
	}
	if err := feed(ctx, dyn.Resource(t.gvr).Namespace(namespace), d, det); err != nil {
		c.Error = err.Error()
	}
	c.Updates = updatesByClass(reg)
	for _, f := range det.Findings() {
		c.Findings = append(c.Findings, Finding{
			Kind: string(f.Kind), Namespace: f.Object.Namespace, Name: f.Object.Name,
			Managers: slices.Clone(f.Managers), Updates: f.Updates,
		})
	}
	return c
}

// feed runs the watch until d has passed, restarting it from the latest
// resourceVersion when the server ends it.
func feed(ctx context.Context, res dynamic.ResourceInterface, d time.Duration, det *diagnose.ChurnDetector) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	list, err := res.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("list to start the watch: %w", err)
	}
	rv := list.GetResourceVersion()
	last := map[string]*unstructured.Unstructured{}
	for ctx.Err() == nil {
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true,
			TimeoutSeconds: ptr(int64(d/time.Second) + 1)})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch: %w", err)
		}
		rv, err = drain(w, rv, last, det)
		w.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// drain handles one watch's events until it ends, and returns the latest
// resourceVersion seen.
func drain(w watch.Interface, rv string, last map[string]*unstructured.Unstructured, det *diagnose.ChurnDetector) (string, error) {
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return rv, fmt.Errorf("watch: %w", apierrors.FromObject(ev.Object))
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		rv = u.GetResourceVersion()
		key := u.GetNamespace() + "/" + u.GetName()
		switch ev.Type {
		case watch.Modified:
			if prev, ok := last[key]; ok {
				det.Observe(prev, u)
			}
			if _, ok := last[key]; ok || len(last) < churnMaxObjects {
				last[key] = u
			}
		case watch.Added:
			if len(last) < churnMaxObjects {
				last[key] = u
			}
		case watch.Deleted:
			det.Forget(u)
			delete(last, key)
		}
	}
	return rv, nil
}

// updatesByClass reads a churn detector's update counts from reg, the
// registry of its WithMetrics, where it exports them; classes with no update
// are left out.
func updatesByClass(reg prometheus.Gatherer) map[string]int {
	out := map[string]int{}
	families, err := reg.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != "cachetune_diagnose_churn_updates_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && m.GetCounter().GetValue() > 0 {
					out[l.GetValue()] = int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// findingText describes a finding in a few words.
func findingText(f Finding) string {
	switch f.Kind {
	case string(diagnose.FindingPingPong):
		return fmt.Sprintf("%s took a field from each other %d times in a row", strings.Join(f.Managers, " and "), f.Updates)
	case string(diagnose.FindingLoop):
		by := "an unnamed manager"
		if len(f.Managers) > 0 {
			by = strings.Join(f.Managers, ", ")
		}
		return fmt.Sprintf("rewritten %d times without a spec change, by %s", f.Updates, by)
	}
	return f.Kind
}
