package reconcile_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/predicate"
	"github.com/cachetune/cachetune/pkg/reconcile"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// behindProxy returns a clientset whose requests pass the fault proxy.
func behindProxy(t *testing.T) (*faults.Proxy, kubernetes.Interface) {
	t.Helper()
	p, err := faults.Start(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, kubernetes.NewForConfigOrDie(p.Config(srv.Config))
}

func (e *widgetEnv) createConfigMap(t *testing.T, name string, owner *unstructured.Unstructured) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Data: map[string]string{"parts": "3"}}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(),
		}}
	}
	if _, err := srv.Clientset().CoreV1().ConfigMaps(e.ns).Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Transient failures (503 from the API server, through the fault proxy) are
// retried with growing delays, measured between the runs; a success resets
// the key, so the next failure waits the base delay again.
func TestTransientFailuresBackOffAndReset(t *testing.T) {
	leakcheck.Check(t)
	e := newWidgetEnv(t)
	proxy, cs := behindProxy(t)
	e.createConfigMap(t, "parts", nil)
	unavailable := faults.Rule{
		Match: faults.Match{Resource: "configmaps", Namespace: e.ns, Verb: faults.Get},
		Fault: faults.Status(503, 0), Count: 5,
	}
	proxy.AddRule(unavailable)

	b := reconcile.Backoff{Initial: 100 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Jitter: 0.2}
	var rec runs
	var results sync.Map // run index → error
	l := reconcile.New("backoff", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		_, err := cs.CoreV1().ConfigMaps(e.ns).Get(ctx, "parts", metav1.GetOptions{})
		results.Store(len(rec.of(req.Key.Name))-1, err)
		return reconcile.Result{}, err
	}, reconcile.WithBackoff(b), reconcile.WithLogger(quiet()))
	if err := l.Watch(e.informer); err != nil {
		t.Fatal(err)
	}
	e.start()
	start(t, l)
	e.create(t, "w", 3)

	eventually(t, time.Minute, "five failures and a success", func() bool { return rec.count("w") == 6 })
	got := rec.of("w")
	for i := 1; i < len(got); i++ {
		gap := got[i].at.Sub(got[i-1].at)
		lo, hi := b.Step(i), b.Step(i)+time.Duration(float64(b.Step(i))*b.Jitter)
		t.Logf("run %d: attempt %d, trigger %s, %s after the previous (backoff %s..%s)", i, got[i].req.Attempt, got[i].req.Trigger, gap.Round(time.Millisecond), lo, hi)
		// Never sooner than the backoff: a wait only grows on a loaded
		// machine. Later than its jitter allows only by what load adds:
		// from the third retry on (400 ms and more), a gap must stay under
		// the next step, which a schedule one step ahead would wait at
		// least; that leaves 0.8 of a step for load.
		if gap < lo || (i >= 3 && gap >= b.Step(i+1)) {
			t.Errorf("run %d came %s after the previous, want the backoff, %s to %s (and under %s)", i, gap, lo, hi, b.Step(i+1))
		}
		if got[i].req.Attempt != i || got[i].req.Trigger != reconcile.Retry {
			t.Errorf("run %d = %+v, want attempt %d, trigger retry", i, got[i].req, i)
		}
	}
	if err, _ := results.Load(5); err != nil {
		t.Fatalf("sixth run failed: %v", err)
	}
	waitIdle(t, l, 5*time.Second)
	if s := l.Stats(); s.InBackoff != 0 {
		t.Errorf("keys in backoff after a success = %d, want 0", s.InBackoff)
	}

	// Reset: the next failure after the success waits the base delay.
	proxy.AddRule(faults.Rule{Match: unavailable.Match, Fault: unavailable.Fault, Count: 1})
	e.setSpec(t, "w", "size", 4)
	eventually(t, time.Minute, "a failure and a retry after the change", func() bool { return rec.count("w") == 8 })
	got = rec.of("w")
	if got[6].req.Attempt != 0 || !got[6].req.Trigger.Has(reconcile.ObjectChanged) {
		t.Errorf("run after the spec change = %+v, want attempt 0, trigger object-changed", got[6].req)
	}
	// Half the wait without the reset (3.2 s) leaves load 1.4 s past the
	// base delay's jitter.
	if gap := got[7].at.Sub(got[6].at); gap < b.Initial || gap >= b.Step(6)/2 {
		t.Errorf("retry after a reset came after %s, want the base delay %s (not the %s the sixth failure would wait)", gap, b.Initial, b.Step(6))
	}
}

// A permanent error (an invalid spec) is recorded as a status condition by
// the asynchronous hook, is not retried, even when the hook's own status
// write comes back as an event, and runs again when the spec changes.
func TestPermanentFailureRecordsConditionAndWaitsForChange(t *testing.T) {
	for _, c := range []struct {
		name  string
		preds []predicate.Predicate
	}{
		{"default predicate", nil},
		// Status writes pass this predicate: only the parking stops the loop.
		{"every change passes", []predicate.Predicate{predicate.ResourceVersionChanged()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			leakcheck.Check(t)
			e := newWidgetEnv(t)
			reg := prometheus.NewRegistry()
			var rec runs
			l := reconcile.New("widgets", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				rec.add(req)
				return e.assemble(ctx, req)
			},
				reconcile.WithLogger(quiet()),
				reconcile.WithMetrics(reg),
				reconcile.WithBackoff(reconcile.Backoff{Initial: 50 * time.Millisecond, Factor: 2, Cap: time.Second}),
				reconcile.WithOnPermanent(reconcile.ConditionHook(e.dyn, dataset.WidgetGVR, "Ready")),
			)
			if err := l.Watch(e.informer, c.preds...); err != nil {
				t.Fatal(err)
			}
			e.start()
			start(t, l)
			e.create(t, "bad", 0)
			e.create(t, "good", 2)

			eventually(t, 10*time.Second, "the InvalidSpec condition on bad", func() bool {
				cond := condition(e.get(t, "bad"), "Ready")
				return cond != nil && cond["reason"] == "InvalidSpec"
			})
			cond := condition(e.get(t, "bad"), "Ready")
			if cond["status"] != "False" || cond["observedGeneration"] != int64(1) || cond["message"] == "" {
				t.Errorf("condition = %v, want status False, observedGeneration 1, a message", cond)
			}
			// The hook's write is an event on bad; nothing else changes it.
			time.Sleep(2 * time.Second)
			if n := rec.count("bad"); n != 1 {
				t.Errorf("bad ran %d times in 2 s after a permanent error, want 1", n)
			}
			if s := l.Stats(); s.Parked != 1 || s.InBackoff != 0 {
				t.Errorf("stats = %+v, want 1 parked, none in backoff", s)
			}
			if c.preds != nil {
				if n := counter(t, reg, "cachetune_reconcile_events_dropped_total", map[string]string{"reason": "parked"}); n < 1 {
					t.Errorf("events dropped for a parked key = %v, want the hook's status write at least", n)
				}
			}

			// Fix the spec: generation 2 runs, succeeds, and says so.
			e.setSpec(t, "bad", "size", 5)
			eventually(t, 10*time.Second, "bad Ready=True at generation 2", func() bool {
				cond := condition(e.get(t, "bad"), "Ready")
				return cond["status"] == "True" && cond["observedGeneration"] == int64(2)
			})
			second := rec.of("bad")[1].req
			if !second.Trigger.Has(reconcile.ObjectChanged) || second.Attempt != 0 {
				t.Errorf("run after the fix = %+v, want trigger object-changed, attempt 0", second)
			}
			waitIdle(t, l, 5*time.Second)
			if s := l.Stats(); s.Parked != 0 {
				t.Errorf("parked after the fix = %d, want 0", s.Parked)
			}
			if n := counter(t, reg, "cachetune_reconcile_hooks_total", map[string]string{"hook": "permanent", "result": "ok"}); n != 1 {
				t.Errorf("permanent hook ran %v times successfully, want 1", n)
			}
		})
	}
}

// A 409 from an update with a stale object is retried within moments, not
// after the (here 10-second) backoff.
func TestConflictIsRetriedPromptly(t *testing.T) {
	leakcheck.Check(t)
	e := newWidgetEnv(t)
	reg := prometheus.NewRegistry()
	var rec runs
	var raced atomic.Bool
	l := reconcile.New("conflict", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		w, err := e.cached(req.Key)
		if err != nil {
			return reconcile.Result{}, err
		}
		w = w.DeepCopy()
		if raced.CompareAndSwap(false, true) {
			// Another writer updates the widget between our read and our write.
			e.setSpec(t, req.Key.Name, "color", `"blue"`)
		}
		w.SetLabels(map[string]string{"reconciled": "yes"})
		_, err = e.widgets.Update(ctx, w, metav1.UpdateOptions{})
		return reconcile.Result{}, err
	},
		reconcile.WithLogger(quiet()),
		reconcile.WithMetrics(reg),
		reconcile.WithBackoff(reconcile.Backoff{Initial: 10 * time.Second, Factor: 2, Cap: time.Minute}),
	)
	// Labels only: our own label write and the other writer's spec change
	// would otherwise queue the key themselves.
	if err := l.Watch(e.informer, predicate.All(predicate.Not(predicate.ResourceVersionChanged()))); err != nil {
		t.Fatal(err)
	}
	e.start()
	start(t, l)
	e.create(t, "w", 1)
	l.Enqueue(cache.NewObjectName(e.ns, "w"))

	eventually(t, time.Minute, "the label written", func() bool { return e.get(t, "w").GetLabels()["reconciled"] == "yes" })
	got := rec.of("w")
	if len(got) < 2 {
		t.Fatalf("%d runs, want a conflict and a retry", len(got))
	}
	gap := got[1].at.Sub(got[0].at)
	t.Logf("conflict retried after %s (%d runs)", gap.Round(time.Millisecond), len(got))
	// Half the 10 s backoff: a retry that waited for it is told apart from
	// the prompt one with room for a loaded machine.
	if gap >= 5*time.Second {
		t.Errorf("conflict retried after %s, want about 100 ms, not the 10 s backoff", gap)
	}
	if got[1].req.Trigger != reconcile.Retry || got[1].req.Attempt != 1 {
		t.Errorf("retry = %+v, want trigger retry, attempt 1", got[1].req)
	}
	if n := counter(t, reg, "cachetune_reconcile_errors_total", map[string]string{"cause": "Conflict", "kind": "transient"}); n < 1 {
		t.Errorf("conflicts counted = %v, want at least 1", n)
	}
}

// An object whose reconcile fails forever costs a bounded number of
// reconciles, and API calls, per minute: never more than Backoff.MaxAttempts.
func TestForeverFailingObjectIsBounded(t *testing.T) {
	leakcheck.Check(t)
	e := newWidgetEnv(t)
	proxy, cs := behindProxy(t)
	proxy.AddRule(faults.Rule{
		Match: faults.Match{Resource: "configmaps", Namespace: e.ns, Verb: faults.Get},
		Fault: faults.Status(503, 0),
	})
	const window, keys = 20 * time.Second, 3
	b := reconcile.Backoff{Initial: 10 * time.Millisecond, Factor: 2, Cap: time.Second, Jitter: 0.5}
	var rec runs
	l := reconcile.New("hot", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		_, err := cs.CoreV1().ConfigMaps(e.ns).Get(ctx, req.Key.Name, metav1.GetOptions{})
		return reconcile.Result{}, err
	}, reconcile.WithBackoff(b), reconcile.WithLogger(quiet()))
	if err := l.Watch(e.informer); err != nil {
		t.Fatal(err)
	}
	e.start()
	stop := start(t, l)
	for i := range keys {
		e.create(t, fmt.Sprint("w", i), 1)
	}
	eventually(t, time.Minute, "every key's first run", func() bool { return rec.count(fmt.Sprint("w", keys-1)) > 0 })
	time.Sleep(window + 500*time.Millisecond)
	stop()

	// The fastest schedule jitter allows, and the slowest.
	upper := b.MaxAttempts(window)
	slow := reconcile.Backoff{Initial: b.Initial * 3 / 2, Factor: b.Factor, Cap: b.Cap * 3 / 2}
	lower := slow.MaxAttempts(window)
	total := 0
	for i := range keys {
		got := rec.of(fmt.Sprint("w", i))
		n := 0
		for _, r := range got {
			if r.at.Sub(got[0].at) <= window {
				n++
			}
		}
		total += len(got)
		t.Logf("w%d: %d reconciles in the first %s (bound %d, slowest schedule %d)", i, n, window, upper, lower)
		if n > upper {
			t.Errorf("w%d ran %d times in %s, above the bound %d", i, n, window, upper)
		}
		// The slowest schedule's count, halved: a loaded machine delays
		// each retry, while a loop that gave up or parked the key would
		// stop after a few.
		if n < lower/2 {
			t.Errorf("w%d ran %d times in %s, want about %d or more (at least %d): it should keep retrying", i, n, window, lower, lower/2)
		}
	}
	calls := proxy.Counts().ByResourceVerb["configmaps"][faults.Get]
	if calls != total {
		t.Errorf("API calls = %d, reconciles = %d: want one call per reconcile", calls, total)
	}
	perMinute := 60 * time.Second / b.Cap
	t.Logf("%d keys, %d API calls in about %s; steady state %d calls a minute per key (60 s / Max)", keys, calls, window, perMinute)
}

// With N workers and bursts of real spec changes on many Widgets, never
// more than N reconciles run at once, never two of one Widget, and every
// Widget ends reconciled at its last generation.
func TestConcurrencyUnderInformerEvents(t *testing.T) {
	leakcheck.Check(t)
	e := newWidgetEnv(t)
	const workers, widgets, writers, rounds = 3, 30, 6, 5
	var active, maxActive, overlaps atomic.Int64
	var perKey sync.Map // name → *atomic.Int32
	var seen sync.Map   // name → last generation reconciled
	l := reconcile.New("burst", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		c, _ := perKey.LoadOrStore(req.Key.Name, new(atomic.Int32))
		if c.(*atomic.Int32).Add(1) > 1 {
			overlaps.Add(1)
		}
		defer c.(*atomic.Int32).Add(-1)
		n := active.Add(1)
		defer active.Add(-1)
		for m := maxActive.Load(); n > m && !maxActive.CompareAndSwap(m, n); m = maxActive.Load() {
		}
		w, err := e.cached(req.Key)
		if err != nil {
			return reconcile.Result{}, err
		}
		time.Sleep(time.Duration(1+rand.IntN(4)) * time.Millisecond)
		seen.Store(req.Key.Name, w.GetGeneration())
		return reconcile.Result{}, nil
	}, reconcile.WithWorkers(workers), reconcile.WithLogger(quiet()))
	if err := l.Watch(e.informer); err != nil {
		t.Fatal(err)
	}
	e.start()
	start(t, l)
	for i := range widgets {
		e.create(t, fmt.Sprint("w", i), 1)
	}
	var wg sync.WaitGroup
	for wr := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(wr), 2))
			for round := range rounds {
				for range 8 { // a burst: several writes to a few widgets
					e.setSpec(t, fmt.Sprint("w", r.IntN(widgets)), "replicas", 100*wr+round)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()

	eventually(t, 20*time.Second, "every widget reconciled at its last generation", func() bool {
		for i := range widgets {
			name := fmt.Sprint("w", i)
			g, ok := seen.Load(name)
			if !ok || g.(int64) != e.get(t, name).GetGeneration() {
				return false
			}
		}
		return true
	})
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d reconciles ran while one of the same widget was running", n)
	}
	if m := maxActive.Load(); m > workers {
		t.Errorf("%d reconciles at once with %d workers", m, workers)
	}
	t.Logf("at most %d reconciles at once with %d workers", maxActive.Load(), workers)
}

// A burst of changes to one Widget within the debounce window becomes one
// reconcile, of the last generation. The window does not slide, so a burst
// whose events a loaded machine spreads over more than the window takes one
// run per window it spans: the runs are held to the windows that the
// burst's events, as the informer delivered them, span (one on a quiet
// machine, where ten writes take a fraction of the window).
func TestDebounceMergesABurst(t *testing.T) {
	leakcheck.Check(t)
	const window = time.Second
	e := newWidgetEnv(t)
	var rec runs
	var lastGen atomic.Int64
	l := reconcile.New("debounce", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		if w, err := e.cached(req.Key); err == nil {
			lastGen.Store(w.GetGeneration())
		}
		return reconcile.Result{}, nil
	}, reconcile.WithDebounce(window), reconcile.WithLogger(quiet()))
	if err := l.Watch(e.informer); err != nil {
		t.Fatal(err)
	}
	// When the informer delivered each change of w, and its generation.
	var mu sync.Mutex
	var delivered []time.Time
	var deliveredGen int64
	if _, err := e.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == "w" {
			mu.Lock()
			delivered, deliveredGen = append(delivered, time.Now()), m.GetGeneration()
			mu.Unlock()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	e.start()
	start(t, l)
	e.create(t, "w", 1)
	eventually(t, time.Minute, "the first run", func() bool { return rec.count("w") == 1 })

	const changes = 10
	first := time.Now()
	for i := range changes {
		e.setSpec(t, "w", "replicas", i+2)
	}
	want := e.get(t, "w").GetGeneration()
	eventually(t, time.Minute, "the burst's changes delivered and the last generation reconciled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return deliveredGen == want && lastGen.Load() == want
	})
	waitIdle(t, l, time.Minute)
	got := rec.of("w")
	mu.Lock()
	span := delivered[len(delivered)-1].Sub(delivered[0])
	mu.Unlock()
	// Another listener of the same informer sees each event within moments
	// of this one: 100 ms of slack for that.
	most := 1 + int((span+100*time.Millisecond)/window)
	if runs := len(got) - 1; runs < 1 || runs > most {
		t.Fatalf("%d runs after a burst of %d changes delivered within %s, want 1 (at most %d: one per %s window they span)", runs, changes, span, most, window)
	}
	if d := got[1].at.Sub(first); d < window-50*time.Millisecond {
		t.Errorf("the burst ran %s after its first change, want the %s window", d, window)
	}
	if lastGen.Load() != want {
		t.Errorf("reconciled generation %d, want the last, %d", lastGen.Load(), want)
	}
}

// A Widget whose ConfigMap is missing fails with 404, a permanent error: it
// waits, and the ConfigMap appearing (a related object, mapped by owner
// reference) runs it again.
func TestRelatedChangeUnparks(t *testing.T) {
	leakcheck.Check(t)
	e := newWidgetEnv(t)
	cmFactory := informers.NewSharedInformerFactoryWithOptions(srv.Clientset(), 0, informers.WithNamespace(e.ns))
	cmInformer := cmFactory.Core().V1().ConfigMaps()
	var rec runs
	l := reconcile.New("related", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		_, err := cmInformer.Lister().ConfigMaps(req.Key.Namespace).Get(req.Key.Name + "-parts")
		return reconcile.Result{}, err
	}, reconcile.WithLogger(quiet()))
	if err := l.Watch(e.informer); err != nil {
		t.Fatal(err)
	}
	if err := l.WatchRelated(cmInformer.Informer(), reconcile.ByOwner(schema.GroupKind{Group: dataset.WidgetGVR.Group, Kind: "Widget"})); err != nil {
		t.Fatal(err)
	}
	e.start()
	cmCtx, cancel := context.WithCancel(context.Background())
	cmFactory.Start(cmCtx.Done())
	t.Cleanup(func() {
		cancel()
		cmFactory.Shutdown()
	})
	start(t, l)
	e.create(t, "w", 1)

	eventually(t, time.Minute, "the failed first run", func() bool { return l.Stats().Parked == 1 })
	time.Sleep(time.Second)
	if n := rec.count("w"); n != 1 {
		t.Fatalf("w ran %d times while its ConfigMap is missing, want 1 (parked on 404)", n)
	}
	e.createConfigMap(t, "w-parts", e.get(t, "w"))
	eventually(t, time.Minute, "the run after the ConfigMap appeared", func() bool { return rec.count("w") == 2 })
	if got := rec.of("w")[1].req.Trigger; got != reconcile.RelatedChanged {
		t.Errorf("trigger = %s, want related-changed", got)
	}
	waitIdle(t, l, 5*time.Second)
	if s := l.Stats(); s.Parked != 0 {
		t.Errorf("parked = %d after the ConfigMap appeared, want 0", s.Parked)
	}
}
