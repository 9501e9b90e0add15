package leanstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// failureLog collects what leanstore logs for each failure, and the errors
// its watch error handler receives.
type failureLog struct {
	mu      sync.Mutex
	logged  []loggedFailure
	handled []error
}

// loggedFailure is one "list/watch failed" line of leanstore's structured log.
type loggedFailure struct {
	Msg       string `json:"msg"`
	Informer  string `json:"informer"`
	Resource  string `json:"resource"`
	Reason    string `json:"reason"`
	Cause     string `json:"cause"`
	Attempt   int    `json:"attempt"`
	NextDelay string `json:"nextDelay"`
	Probe     bool   `json:"probe"`
}

func (l *failureLog) write(obj string) {
	var f loggedFailure
	if err := json.Unmarshal([]byte(obj), &f); err != nil || f.Msg != "list/watch failed" {
		return
	}
	l.mu.Lock()
	l.logged = append(l.logged, f)
	l.mu.Unlock()
}

func (l *failureLog) handle(_ *cache.Reflector, err error) {
	l.mu.Lock()
	l.handled = append(l.handled, err)
	l.mu.Unlock()
}

// since returns the failures logged from index i on.
func (l *failureLog) since(i int) []loggedFailure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedFailure(nil), l.logged[min(i, len(l.logged)):]...)
}

func (l *failureLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.logged)
}

// TestResilienceBackoffResetsAfterSuccess fails an informer's lists with 503
// until its delay reaches the cap, lifts the fault, and fails them again: the
// delays double from Initial up to Cap (with at most Jitter of extra), and
// after the informer recovered (ConsecutiveFailures back to 0, readiness
// passing) the next failure waits Initial again, not the cap. The delays are
// read from leanstore's structured log, which carries each failure's
// informer, resource, reason, cause, attempt and next delay; the handler
// receives the same failures.
func TestResilienceBackoffResetsAfterSuccess(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	for i := range 20 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}}
		if _, err := srv.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := startProxy(t)

	b := leanstore.Backoff{Initial: 200 * time.Millisecond, Factor: 2, Cap: 1600 * time.Millisecond, Jitter: 0.25, ResetAfter: 2 * time.Minute}
	var log failureLog
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(p.Config(srv.Config)), 0,
		leanstore.WithNamespace(ns), leanstore.WithName("backoff"), leanstore.WithBackoff(b),
		leanstore.WithStreamingLists(leanstore.StreamingOff), leanstore.WithLogger(funcr.NewJSON(log.write, funcr.Options{})))
	inf := leanstore.Unwrap(f.Core().V1().ConfigMaps().Informer())
	if err := inf.SetWatchErrorHandler(log.handle); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer f.Shutdown()
	defer stop()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}

	// fail ends the live watch with a 410, so that the informer lists again,
	// and answers every list with 503 until n list failures were logged.
	fail := func(n int) []loggedFailure {
		t.Helper()
		from := log.len()
		remove := p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.List}, Fault: faults.Status(503, 0)})
		defer remove()
		// The watch starts just after the list that synced or recovered.
		for deadline := time.Now().Add(30 * time.Second); p.EndWatches(faults.Match{Resource: "configmaps"}, faults.Gone()) != 1; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no live watch to end in 30 s")
			}
		}
		var lists []loggedFailure
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			lists = lists[:0]
			for _, lf := range log.since(from) {
				if lf.Cause == string(failure.ServiceUnavailable) && !lf.Probe {
					lists = append(lists, lf)
				}
			}
			if len(lists) >= n {
				return lists[:n]
			}
		}
		t.Fatalf("%d list failures in 30 s, want %d: %+v", len(lists), n, log.since(from))
		return nil
	}

	first := fail(6)
	for i, lf := range first {
		want := min(b.Initial<<i, b.Cap)
		checkDelay(t, fmt.Sprintf("failure %d before the reset", i+1), lf, want, b.Jitter)
		if lf.Informer != "backoff/configmaps" || lf.Resource != "configmaps" || lf.Reason != string(failure.InitialListFailed) {
			t.Errorf("failure %d logged as %+v, want informer backoff/configmaps, resource configmaps, reason InitialListFailed", i+1, lf)
		}
	}
	// Waits longer than a second are probed with a list of one object; each
	// failed probe is reported too, with what is left of the wait.
	probes := 0
	for _, lf := range log.since(0) {
		if lf.Probe {
			probes++
			if lf.Reason != string(failure.InitialListFailed) || lf.Cause != string(failure.ServiceUnavailable) {
				t.Errorf("probe failure logged as %+v, want reason InitialListFailed, cause ServiceUnavailable", lf)
			}
		}
	}
	if probes == 0 {
		t.Error("no failed probe was reported during waits of 1.6 s")
	}
	if st := inf.Status(); st.ConsecutiveFailures < 6 {
		t.Errorf("ConsecutiveFailures %d during the fault, want at least 6", st.ConsecutiveFailures)
	}
	if err := f.Check(ctx); err == nil || !strings.Contains(err.Error(), "backoff/configmaps degraded") {
		t.Errorf("readiness during the fault: %v, want backoff/configmaps degraded", err)
	}

	// The fault is lifted: the next list succeeds and resets the backoff.
	for deadline := time.Now().Add(30 * time.Second); inf.Status().ConsecutiveFailures != 0 || f.Check(ctx) != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not recovered 30 s after the fault: %+v, readiness %v", inf.Status(), f.Check(ctx))
		}
	}

	again := fail(2)
	checkDelay(t, "first failure after the reset", again[0], b.Initial, b.Jitter)
	if again[0].Attempt != 2 { // the 410 that ended the watch was the first
		t.Errorf("first list failure after the reset is attempt %d, want 2 (counted afresh)", again[0].Attempt)
	}

	stop()
	f.Shutdown()
	log.mu.Lock()
	handled, logged := len(log.handled), len(log.logged)
	log.mu.Unlock()
	if handled != logged {
		t.Errorf("handler got %d failures, log has %d: each failure must reach both", handled, logged)
	}
}

// checkDelay checks a logged failure's next delay: want, plus at most jitter
// times want.
func checkDelay(t *testing.T, what string, lf loggedFailure, want time.Duration, jitter float64) {
	t.Helper()
	got, err := time.ParseDuration(lf.NextDelay)
	if err != nil {
		t.Errorf("%s: nextDelay %q: %v", what, lf.NextDelay, err)
		return
	}
	// The log rounds to the millisecond.
	hi := want + time.Duration(jitter*float64(want)) + time.Millisecond
	if got < want-time.Millisecond || got > hi {
		t.Errorf("%s: next delay %s, want %s to %s", what, got, want, hi)
	}
}

// TestResilienceQuietWatchRecovers fails a synced informer's watches with 503
// in a namespace where nothing changes, and lifts the fault: the informer
// recovers by watching again, with no list and no event to tell it the watch
// works (the first bookmark comes about a minute later), yet its Status and
// readiness must say it recovered as soon as the new watch holds: a watch
// open for a moment without an error counts as a success, as a probe's does.
func TestResilienceQuietWatchRecovers(t *testing.T) {
	leakcheck.Check(t)
	ctx := testContext(t, 2*time.Minute)
	ns := srv.NewNamespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}}
	if _, err := srv.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t)

	b := leanstore.Backoff{Initial: 200 * time.Millisecond, Factor: 2, Cap: 1600 * time.Millisecond, Jitter: 0.25, ResetAfter: 2 * time.Minute}
	f := leanstore.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(p.Config(srv.Config)), 0,
		leanstore.WithNamespace(ns), leanstore.WithName("quiet"), leanstore.WithBackoff(b), leanstore.WithLogger(logr.Discard()))
	inf := leanstore.Unwrap(f.Core().V1().ConfigMaps().Informer())
	runCtx, stop := context.WithCancel(ctx)
	defer f.Shutdown()
	defer stop()
	f.StartWithContext(runCtx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}

	// The watch breaks (a cut, resumed inside the watch from its
	// resourceVersion) and every new watch is refused until three failures
	// in a row are counted.
	remove := p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.Watch}, Fault: faults.Status(503, 0)})
	for deadline := time.Now().Add(30 * time.Second); p.EndWatches(faults.Match{Resource: "configmaps"}, faults.Cut(0)) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			remove()
			t.Fatal("no live watch to end in 30 s")
		}
	}
	for deadline := time.Now().Add(30 * time.Second); inf.Status().ConsecutiveFailures < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			remove()
			t.Fatalf("fewer than 3 failures in a row in 30 s: %+v", inf.Status())
		}
	}
	remove()
	lists := inf.Status().Lists

	// Recovered well before the first bookmark of the new watch, and by a
	// watch: no list was needed.
	for deadline := time.Now().Add(20 * time.Second); inf.Status().ConsecutiveFailures != 0 || f.Check(ctx) != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not recovered 20 s after the fault, with nothing changing: %+v, readiness %v", inf.Status(), f.Check(ctx))
		}
	}
	if st := inf.Status(); st.Lists != lists {
		t.Errorf("the informer listed %d times to recover, want a watch alone", st.Lists-lists)
	}
}
