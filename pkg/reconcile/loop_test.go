package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/reconcile"
)

// With N workers, never more than N reconciles run at once and never two of
// one key, however the keys arrive; every key runs after its last enqueue.
func TestWorkersBoundAndOneRunPerKey(t *testing.T) {
	leakcheck.Check(t)
	const workers, keys, producers, bursts = 4, 200, 8, 40
	var (
		active, maxActive atomic.Int64
		perKey            [keys]atomic.Int32
		overlaps, ran     atomic.Int64
		lastEnqueue       [keys]atomic.Int64 // unix nanos
		lastStart         [keys]atomic.Int64
	)
	index := func(k cache.ObjectName) int {
		var i int
		_, _ = fmt.Sscanf(k.Name, "k-%d", &i) // the test's own names: k-0, k-1, ...
		return i
	}
	l := reconcile.New("bound", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		i := index(req.Key)
		lastStart[i].Store(time.Now().UnixNano())
		if perKey[i].Add(1) > 1 {
			overlaps.Add(1)
		}
		n := active.Add(1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		active.Add(-1)
		perKey[i].Add(-1)
		ran.Add(1)
		return reconcile.Result{}, nil
	}, reconcile.WithWorkers(workers), reconcile.WithLogger(quiet()))
	start(t, l)

	var enqueued atomic.Int64
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for range bursts {
				// A burst: a handful of keys, each enqueued several times.
				for range 10 {
					i := r.IntN(keys)
					for range 1 + r.IntN(5) {
						lastEnqueue[i].Store(time.Now().UnixNano())
						l.Enqueue(cache.NewObjectName("ns", fmt.Sprintf("k-%03d", i)))
						enqueued.Add(1)
					}
				}
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	waitIdle(t, l, 30*time.Second)

	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d reconciles ran while another of the same key was running", n)
	}
	if m := maxActive.Load(); m > workers {
		t.Errorf("%d reconciles ran at once with %d workers", m, workers)
	} else if m < workers {
		t.Errorf("at most %d reconciles ran at once: the %d workers were never all busy", m, workers)
	}
	if ran.Load() >= enqueued.Load() {
		t.Errorf("%d reconciles for %d enqueues: duplicates were not merged", ran.Load(), enqueued.Load())
	}
	for i := range keys {
		if e := lastEnqueue[i].Load(); e != 0 && lastStart[i].Load() < e {
			t.Errorf("key k-%03d: last enqueued after its last reconcile started: an update was lost", i)
		}
	}
	t.Logf("%d enqueues, %d reconciles, at most %d at once", enqueued.Load(), ran.Load(), maxActive.Load())
}

// A key enqueued many times while it runs runs once more, not once per
// enqueue, with the reasons merged.
func TestDuplicatesMerge(t *testing.T) {
	leakcheck.Check(t)
	release := make(chan struct{})
	var rec runs
	l := reconcile.New("merge", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		if req.Key.Name == "a" && rec.count("a") == 1 {
			<-release
		}
		return reconcile.Result{}, nil
	}, reconcile.WithWorkers(2), reconcile.WithLogger(quiet()))
	start(t, l)

	a := cache.NewObjectName("ns", "a")
	l.Enqueue(a)
	eventually(t, 5*time.Second, "the first run of a", func() bool { return rec.count("a") == 1 })
	for range 100 {
		l.Enqueue(a)
	}
	l.EnqueueAfter(a, 0)
	l.Enqueue(cache.NewObjectName("ns", "b"))
	eventually(t, 5*time.Second, "b to run alongside", func() bool { return rec.count("b") == 1 })
	close(release)
	waitIdle(t, l, 10*time.Second)

	if n := rec.count("a"); n != 2 {
		t.Fatalf("a ran %d times after 102 enqueues, 100 of them during its first run: want 2", n)
	}
	if got := rec.of("a")[1].req.Trigger; got != reconcile.Enqueued {
		t.Errorf("second run's trigger = %s, want enqueued", got)
	}
}

// Stopping lets the reconcile in flight finish with its context cancelled,
// drops what is still queued, and leaves no goroutine behind.
func TestRunStopsCleanly(t *testing.T) {
	leakcheck.Check(t)
	var started, sawCancel atomic.Int32
	var rec runs
	l := reconcile.New("stop", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		started.Add(1)
		<-ctx.Done()
		sawCancel.Add(1)
		return reconcile.Result{}, ctx.Err()
	}, reconcile.WithWorkers(1), reconcile.WithLogger(quiet()))
	stop := start(t, l)
	for i := range 10 {
		l.Enqueue(cache.NewObjectName("ns", fmt.Sprint("k", i)))
	}
	eventually(t, 5*time.Second, "the first reconcile", func() bool { return started.Load() == 1 })
	begin := time.Now()
	stop()
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Run took %s to return", d)
	}
	if started.Load() != 1 || sawCancel.Load() != 1 {
		t.Errorf("%d reconciles started and %d saw the cancellation, want 1 and 1: queued keys must be dropped", started.Load(), sawCancel.Load())
	}
	// Enqueue after the loop stopped is a no-op, not a leak.
	l.Enqueue(cache.NewObjectName("ns", "late"))
	if s := l.Stats(); s.Queued != 0 || s.Scheduled != 0 {
		t.Errorf("stats after stop = %+v, want nothing queued", s)
	}
	if err := l.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Run = %v, want an error", err)
	}
}

// A loop that never runs starts nothing; keys enqueued before Run run once
// it does.
func TestEnqueueBeforeRun(t *testing.T) {
	leakcheck.Check(t)
	var rec runs
	l := reconcile.New("early", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		return reconcile.Result{}, nil
	}, reconcile.WithLogger(quiet()))
	l.Enqueue(cache.NewObjectName("ns", "a"))
	l.EnqueueAfter(cache.NewObjectName("ns", "b"), 50*time.Millisecond)
	if s := l.Stats(); s.Queued != 1 || s.Scheduled != 1 {
		t.Errorf("stats before Run = %+v, want 1 queued and 1 scheduled", s)
	}
	start(t, l)
	eventually(t, 5*time.Second, "both keys to run", func() bool { return rec.count("a") == 1 && rec.count("b") == 1 })
}

func TestRequeueAfterAndPanic(t *testing.T) {
	leakcheck.Check(t)
	var rec runs
	l := reconcile.New("requeue", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		switch n := rec.count(req.Key.Name); {
		case req.Key.Name == "poll" && n == 1:
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		case req.Key.Name == "panics" && n == 1:
			panic("nil map")
		}
		return reconcile.Result{}, nil
	}, reconcile.WithLogger(quiet()), reconcile.WithBackoff(reconcile.Backoff{Initial: 50 * time.Millisecond, Factor: 2, Cap: time.Second}))
	start(t, l)
	l.Enqueue(cache.NewObjectName("ns", "poll"))
	l.Enqueue(cache.NewObjectName("ns", "panics"))
	eventually(t, 5*time.Second, "second runs", func() bool { return rec.count("poll") == 2 && rec.count("panics") == 2 })

	poll := rec.of("poll")
	if gap := poll[1].at.Sub(poll[0].at); gap < 200*time.Millisecond {
		t.Errorf("RequeueAfter 200ms ran again after %s", gap)
	}
	if got := poll[1].req.Trigger; got != reconcile.Requeued {
		t.Errorf("requeued run's trigger = %s, want requeued", got)
	}
	p := rec.of("panics")[1].req
	if p.Trigger != reconcile.Retry || p.Attempt != 1 {
		t.Errorf("run after a panic = %+v, want a retry, attempt 1", p)
	}
}

// Hooks run off the workers, a bounded number at a time, each cut off at its
// time-out.
func TestHooksAreBoundedAndTimeLimited(t *testing.T) {
	leakcheck.Check(t)
	const keys, concurrency = 12, 2
	var running, maxRunning, deadlines atomic.Int64
	reg := prometheus.NewRegistry()
	l := reconcile.New("hooks", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, failure.Reconcile(failure.InvalidSpec, req.Key.String(), errors.New("spec.size must be positive"))
	},
		reconcile.WithWorkers(4),
		reconcile.WithLogger(quiet()),
		reconcile.WithMetrics(reg),
		reconcile.WithHookConcurrency(concurrency),
		reconcile.WithHookTimeout(100*time.Millisecond),
		reconcile.WithOnPermanent(func(ctx context.Context, f reconcile.Failure) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			if !f.Decision.Park || f.Class.Reason != failure.InvalidSpec {
				return fmt.Errorf("hook got %+v", f)
			}
			<-ctx.Done() // a hook stuck on a slow server
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				deadlines.Add(1)
			}
			return ctx.Err()
		}),
	)
	start(t, l)
	for i := range keys {
		l.Enqueue(cache.NewObjectName("ns", fmt.Sprint("k", i)))
	}
	eventually(t, 10*time.Second, "every hook to time out", func() bool { return deadlines.Load() == keys })
	if m := maxRunning.Load(); m > concurrency {
		t.Errorf("%d hooks ran at once, want at most %d", m, concurrency)
	}
	if got := counter(t, reg, "cachetune_reconcile_hooks_total", map[string]string{"hook": "permanent", "result": "timeout"}); got != keys {
		t.Errorf("hooks_total{result=timeout} = %v, want %d", got, keys)
	}
	if s := l.Stats(); s.Parked != keys {
		t.Errorf("parked keys = %d, want %d", s.Parked, keys)
	}
}

func TestConfigurationErrors(t *testing.T) {
	leakcheck.Check(t)
	ok := func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }
	cases := []struct {
		name string
		loop *reconcile.Loop
		want string
	}{
		{"no workers", reconcile.New("x", ok, reconcile.WithWorkers(0)), "workers must be at least 1"},
		{"bad backoff", reconcile.New("x", ok, reconcile.WithBackoff(reconcile.Backoff{Initial: time.Second, Cap: time.Millisecond, Factor: 2})), "invalid backoff"},
		{"no func", reconcile.New("x", nil), "nil Func"},
		{"no name", reconcile.New("", ok), "empty name"},
		{"no hook time", reconcile.New("x", ok, reconcile.WithHookTimeout(0)), "hook timeout"},
		{"negative trace verbosity", reconcile.New("x", ok, reconcile.WithTraceVerbosity(-1)), "trace verbosity"},
	}
	for _, c := range cases {
		err := c.loop.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Run = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	reg := prometheus.NewRegistry()
	reconcile.New("same", ok, reconcile.WithMetrics(reg))
	if err := reconcile.New("same", ok, reconcile.WithMetrics(reg)).Run(context.Background()); err == nil {
		t.Error("two loops with one name on one registry: Run = nil, want a registration error")
	}
	if err := reconcile.New("other", ok, reconcile.WithMetrics(reg)).Run(canceled()); err != nil {
		t.Errorf("a second loop with another name on the same registry: Run = %v", err)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// Every reconcile leaves one structured trace line with the object, why it
// ran, how it ended and when it runs next.
func TestTraceLines(t *testing.T) {
	leakcheck.Check(t)
	var logs logBuffer
	var rec runs
	l := reconcile.New("traced", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		rec.add(req)
		if rec.count(req.Key.Name) == 1 {
			return reconcile.Result{}, fmt.Errorf("get configmap: %w", &failure.Error{Layer: failure.LayerClient, Reason: failure.Timeout})
		}
		return reconcile.Result{RequeueAfter: time.Hour}, nil
	},
		reconcile.WithLogger(logr.FromSlogHandler(slog.NewJSONHandler(&logs, nil))),
		reconcile.WithBackoff(reconcile.Backoff{Initial: 20 * time.Millisecond, Factor: 2, Cap: time.Second}),
	)
	start(t, l)
	l.Enqueue(cache.NewObjectName("shop", "w1"))
	eventually(t, 5*time.Second, "two trace lines", func() bool {
		return len(logs.lines("reconcile failed, will retry", "reconciled")) == 2
	})
	lines := logs.lines("reconcile failed, will retry", "reconciled")
	want := []map[string]any{
		{"controller": "traced", "object": "shop/w1", "trigger": "enqueued", "attempt": 0.0, "outcome": "retry", "class": "client/Timeout (transient)", "level": "WARN"},
		{"controller": "traced", "object": "shop/w1", "trigger": "retry", "attempt": 1.0, "outcome": "requeue", "next": float64(time.Hour), "level": "INFO"},
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (line %v)", i, k, lines[i][k], v, lines[i])
			}
		}
		if _, ok := lines[i]["duration"]; !ok {
			t.Errorf("line %d has no duration: %v", i, lines[i])
		}
	}
	if next, ok := lines[0]["next"].(float64); !ok || time.Duration(next) < 20*time.Millisecond {
		t.Errorf("failed line's next = %v, want the backoff (≥ 20ms)", lines[0]["next"])
	}
}

// WithLogger sends the traces through a logr.Logger (klog, zapr, ...).
func TestLogr(t *testing.T) {
	leakcheck.Check(t)
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{})
	done := make(chan struct{})
	l := reconcile.New("logr", func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		defer close(done)
		return reconcile.Result{}, nil
	}, reconcile.WithLogger(logger))
	stop := start(t, l)
	l.Enqueue(cache.NewObjectName("ns", "a"))
	<-done
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, line := range lines {
		if strings.Contains(line, `"msg"="reconciled"`) && strings.Contains(line, `"object"="ns/a"`) &&
			strings.Contains(line, `"trigger"="enqueued"`) && strings.Contains(line, `"controller"="logr"`) {
			return
		}
	}
	t.Errorf("no trace line for ns/a among %q", lines)
}
