package diagnose_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/diagnose"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// findings returns the detector's findings about one object.
func findings(d *diagnose.ChurnDetector, name string) []diagnose.Finding {
	var out []diagnose.Finding
	for _, f := range d.Findings() {
		if f.Object.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// touchQuietly updates a widget twice, the way a healthy controller does: a
// status report, then a label.
func touchQuietly(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	res := slowClient(10).Resource(dataset.WidgetGVR).Namespace(ns)
	for _, p := range []struct{ body, sub string }{
		{`{"status":{"phase":"Ready"}}`, "status"},
		{`{"metadata":{"labels":{"tier":"gold"}}}`, ""},
	} {
		var subs []string
		if p.sub != "" {
			subs = append(subs, p.sub)
		}
		if _, err := res.Patch(ctx, name, types.MergePatchType, []byte(p.body), metav1.PatchOptions{FieldManager: "quiet-controller"}, subs...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoopFlagged runs a controller that writes a timestamp into a Widget's
// status on every event it sees: the detector must flag the loop, naming the
// controller's field manager, within a minute (seconds on a quiet machine),
// and leave a quiet Widget alone.
func TestLoopFlagged(t *testing.T) {
	needServer(t)
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)

	d, err := diagnose.NewChurnDetector(diagnose.WithResource("widgets"), diagnose.WithWindow(10*time.Second), diagnose.WithLoopThreshold(10))
	if err != nil {
		t.Fatal(err)
	}
	inf, stopInformer := widgetInformer(ctx, t, ns, func(inf cache.SharedIndexInformer) {
		if _, err := inf.AddEventHandler(d.Handler()); err != nil {
			t.Fatal(err)
		}
	})
	defer stopInformer()
	createWidget(ctx, t, ns, "looping")
	createWidget(ctx, t, ns, "quiet")

	status := slowClient(10).Resource(dataset.WidgetGVR).Namespace(ns)
	start := time.Now()
	writes := 0
	c := startController(ctx, t, inf, ns, "looping", func(ctx context.Context, _ *unstructured.Unstructured) {
		body := fmt.Sprintf(`{"status":{"lastHeartbeat":%q}}`, time.Now().Format(time.RFC3339Nano))
		if _, err := status.Patch(ctx, "looping", types.MergePatchType, []byte(body),
			metav1.PatchOptions{FieldManager: "heartbeat-controller"}, "status"); err == nil {
			writes++
		} else if ctx.Err() == nil {
			t.Errorf("status write: %v", err)
		}
	})
	touchQuietly(ctx, t, ns, "quiet")
	took := waitFor(t, time.Minute, "loop flagged", func() bool { return len(findings(d, "looping")) > 0 })
	c.stop()
	t.Logf("loop flagged after %s and %d status writes", took.Round(time.Millisecond), writes)

	got := findings(d, "looping")
	if len(got) != 1 || got[0].Kind != diagnose.FindingLoop {
		t.Fatalf("findings for the looping widget: %+v, want one loop", got)
	}
	f := got[0]
	if !slices.Contains(f.Managers, "heartbeat-controller") {
		t.Errorf("loop managers %v do not name heartbeat-controller", f.Managers)
	}
	if f.Updates < 10 || f.Distinct*2 <= f.Updates || f.Classes[diagnose.ClassStatus] < 10 || f.Streak < f.Updates {
		t.Errorf("loop finding %+v: want at least 10 status updates, most of them distinct", f)
	}
	if f.Resource != "widgets" || f.Object.Namespace != ns || f.Object.UID == "" || f.FirstSeen.Before(start) {
		t.Errorf("loop finding identifies %s %+v first seen %v", f.Resource, f.Object, f.FirstSeen)
	}
	if q := findings(d, "quiet"); len(q) != 0 {
		t.Errorf("the quiet widget was flagged: %+v", q)
	}
}

// TestPingPongFlagged runs two controllers that fight over one annotation,
// each setting its own value with its own field manager as soon as it sees the
// other's: the detector must flag ping-pong naming both managers within a minute,
// must not call it a loop, and must leave a quiet Widget alone. The fight is
// run with Update (merge patch) on both sides, and with server-side apply
// (forced) against Update.
func TestPingPongFlagged(t *testing.T) {
	needServer(t)
	for _, tc := range []struct{ name, bobMode string }{{"update-vs-update", "update"}, {"update-vs-apply", "apply"}} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ns := srv.NewNamespace(t)

			d, err := diagnose.NewChurnDetector(diagnose.WithResource("widgets"), diagnose.WithWindow(10*time.Second),
				diagnose.WithLoopThreshold(10), diagnose.WithPingPongTurns(6))
			if err != nil {
				t.Fatal(err)
			}
			inf, stopInformer := widgetInformer(ctx, t, ns, func(inf cache.SharedIndexInformer) {
				if _, err := inf.AddEventHandler(d.Handler()); err != nil {
					t.Fatal(err)
				}
			})
			defer stopInformer()
			createWidget(ctx, t, ns, "contested")
			createWidget(ctx, t, ns, "quiet")

			const annotation = "cachetune.dev/owner"
			fighter := func(manager, mode string) func(context.Context, *unstructured.Unstructured) {
				res := slowClient(10).Resource(dataset.WidgetGVR).Namespace(ns)
				return func(ctx context.Context, w *unstructured.Unstructured) {
					if w.GetAnnotations()[annotation] == manager {
						return // the field is as it wants it: nothing to do
					}
					time.Sleep(50 * time.Millisecond) // a reconcile takes a moment
					var err error
					if mode == "apply" {
						body := fmt.Sprintf(`{"apiVersion":"bench.cachetune.dev/v1","kind":"Widget","metadata":{"name":"contested","namespace":%q,"annotations":{%q:%q}}}`,
							ns, annotation, manager)
						_, err = res.Patch(ctx, "contested", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: ptrTo(true)})
					} else {
						body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotation, manager)
						_, err = res.Patch(ctx, "contested", types.MergePatchType, []byte(body), metav1.PatchOptions{FieldManager: manager})
					}
					if err != nil && ctx.Err() == nil {
						t.Errorf("%s: %v", manager, err)
					}
				}
			}
			alice := startController(ctx, t, inf, ns, "contested", fighter("alice-controller", "update"))
			bob := startController(ctx, t, inf, ns, "contested", fighter("bob-controller", tc.bobMode))
			touchQuietly(ctx, t, ns, "quiet")
			took := waitFor(t, time.Minute, "ping-pong flagged", func() bool {
				for _, f := range findings(d, "contested") {
					if f.Kind == diagnose.FindingPingPong {
						return true
					}
				}
				return false
			})
			// Let them fight a little longer: a loop must still not be reported.
			time.Sleep(2 * time.Second)
			alice.stop()
			bob.stop()
			t.Logf("ping-pong flagged after %s", took.Round(time.Millisecond))

			got := findings(d, "contested")
			if len(got) != 1 || got[0].Kind != diagnose.FindingPingPong {
				t.Fatalf("findings for the contested widget: %+v, want exactly one ping-pong", got)
			}
			if want := []string{"alice-controller", "bob-controller"}; !slices.Equal(got[0].Managers, want) {
				t.Errorf("ping-pong managers %v, want %v", got[0].Managers, want)
			}
			if got[0].Updates < 6 || got[0].Classes[diagnose.ClassMetadata] < 6 {
				t.Errorf("ping-pong finding %+v: want at least 6 turns, all metadata updates", got[0])
			}
			if q := findings(d, "quiet"); len(q) != 0 {
				t.Errorf("the quiet widget was flagged: %+v", q)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
