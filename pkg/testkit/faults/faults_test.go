package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

// encodings are the two wire formats every fault is tested in.
var encodings = []string{"json", "protobuf"}

// env is one test's proxy, namespace and clients.
type env struct {
	p   *faults.Proxy
	ns  string
	cs  kubernetes.Interface // through the proxy, in the test's encoding
	raw rest.Interface       // the core/v1 REST client of cs
	ctx context.Context
}

func newEnv(t *testing.T, encoding string) *env {
	t.Helper()
	if srv == nil {
		t.Skip("no API server (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	p, err := faults.Start(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close proxy: %v", err)
		}
	})
	cfg := p.Config(srv.Config)
	if encoding == "json" {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	} else {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	return &env{p: p, ns: srv.NewNamespace(t), cs: cs, raw: cs.CoreV1().RESTClient(), ctx: ctx}
}

// seed creates n ConfigMaps directly on the server (not through the proxy).
func (e *env) seed(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"k": strings.Repeat("v", 200)}}
		if _, err := srv.Clientset().CoreV1().ConfigMaps(e.ns).Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// listOnce lists ConfigMaps with client-go's own retries switched off, so the
// test sees the first answer.
func (e *env) listOnce() error {
	var list corev1.ConfigMapList
	return e.raw.Get().Namespace(e.ns).Resource("configmaps").MaxRetries(0).Do(e.ctx).Into(&list)
}

func (e *env) watch(t *testing.T, opts metav1.ListOptions) watch.Interface {
	t.Helper()
	w, err := e.cs.CoreV1().ConfigMaps(e.ns).Watch(e.ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// events reads a watch until its channel closes or the deadline passes.
func events(t *testing.T, w watch.Interface, deadline time.Duration) (evs []watch.Event, closed bool) {
	t.Helper()
	return eventsUntil(t, w, -1, deadline)
}

// eventsUntil reads a watch until n events came (n < 0: no limit), its
// channel closes or the deadline passes.
func eventsUntil(t *testing.T, w watch.Interface, n int, deadline time.Duration) (evs []watch.Event, closed bool) {
	t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for n < 0 || len(evs) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return evs, true
			}
			evs = append(evs, ev)
		case <-timer.C:
			return evs, false
		}
	}
	return evs, false
}

// Deadlines of the reads above. An end or an event that is due is waited
// for up to due: reading returns as soon as it comes, so a long deadline
// costs nothing on a quiet machine and holds on a loaded one. Silence that
// is due is watched for quiet, long enough for a stray event to come.
const (
	due   = 30 * time.Second
	quiet = 2 * time.Second
)

func streamingList() metav1.ListOptions {
	return metav1.ListOptions{
		SendInitialEvents:    new(true),
		AllowWatchBookmarks:  true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	}
}

func types(evs []watch.Event) []watch.EventType {
	var out []watch.EventType
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// errorStatus returns the Status of the single ERROR event that ends evs.
func errorStatus(t *testing.T, evs []watch.Event) *apierrors.StatusError {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].Type != watch.Error {
		t.Fatalf("events %v, want the last to be ERROR", types(evs))
	}
	var se *apierrors.StatusError
	if !errors.As(apierrors.FromObject(evs[len(evs)-1].Object), &se) {
		t.Fatalf("ERROR event object %T is no Status", evs[len(evs)-1].Object)
	}
	return se
}

func TestPassThroughKeepsIdentity(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 3)
			list, err := e.cs.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// kube-root-ca.crt is not published without a controller manager.
			if len(list.Items) != 3 {
				t.Errorf("listed %d ConfigMaps through the proxy, want 3", len(list.Items))
			}
			if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "cm-000", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}

			// The restricted identity is still restricted behind the proxy.
			restricted := kubernetes.NewForConfigOrDie(e.p.Config(srv.RestrictedConfig))
			_, err = restricted.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{})
			if !apierrors.IsForbidden(err) {
				t.Errorf("restricted list through the proxy: %v, want 403", err)
			}

			c := e.p.Counts()
			if c.ByResourceVerb["configmaps"][faults.List] != 2 || c.ByResourceVerb["configmaps"][faults.Get] != 1 {
				t.Errorf("configmaps counts %v, want 2 lists and 1 get", c.ByResourceVerb["configmaps"])
			}
			if c.BytesToClient < 600 {
				t.Errorf("BytesToClient = %d, want at least the 3 ConfigMaps' data", c.BytesToClient)
			}
			if c.Faulted != 0 {
				t.Errorf("Faulted = %d without rules", c.Faulted)
			}
		})
	}
}

// TestUpstreamCredentials checks that with WithUpstreamCredentials the proxy,
// not the client, authenticates: a client without credentials gets the
// upstream user's access, and a client's own token does not change it.
func TestUpstreamCredentials(t *testing.T) {
	if srv == nil {
		t.Skip("no API server (-short)")
	}
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	start := func(upstream *rest.Config) *faults.Proxy {
		t.Helper()
		p, err := faults.Start(upstream, faults.WithUpstreamCredentials())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.Close(); err != nil {
				t.Errorf("close proxy: %v", err)
			}
		})
		return p
	}

	admin := start(srv.Config)
	cfg := admin.Config(srv.Config)
	if cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.ExecProvider != nil {
		t.Errorf("Config keeps credentials: token %t, token file %q, exec %v", cfg.BearerToken != "", cfg.BearerTokenFile, cfg.ExecProvider)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list without credentials through the admin's proxy: %v", err)
	}

	// The restricted user's proxy stays restricted, even for a client that
	// sends the admin's token itself.
	restricted := start(srv.RestrictedConfig)
	withAdminToken := restricted.Config(srv.RestrictedConfig)
	withAdminToken.BearerToken = srv.Config.BearerToken
	_, err := kubernetes.NewForConfigOrDie(withAdminToken).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("list through the restricted user's proxy with the admin's token: %v, want 403", err)
	}
}

func TestGone(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 2)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: e.ns}, Fault: faults.Gone()})

			if err := e.listOnce(); !apierrors.IsResourceExpired(err) || apierrors.ReasonForError(err) != metav1.StatusReasonExpired {
				t.Errorf("list: %v, want 410 Expired", err)
			}

			w := e.watch(t, metav1.ListOptions{})
			evs, closed := events(t, w, 10*time.Second)
			if !closed || len(evs) != 1 {
				t.Fatalf("watch gave %v (closed %v), want one ERROR event and the end", types(evs), closed)
			}
			if se := errorStatus(t, evs); se.Status().Code != 410 || !apierrors.IsResourceExpired(se) {
				t.Errorf("watch ERROR status %+v, want 410 Expired", se.Status())
			}
		})
	}
}

// A Gone rule with ResourceVersionAtMost acts as a compacted server: watches
// from that resourceVersion or older expire, every time; a watch from a newer
// one, or from now, works.
func TestGoneForCompactedResourceVersions(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "protobuf")
	e.seed(t, 2)
	l, err := e.cs.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.Watch, ResourceVersionAtMost: rv}, Fault: faults.Gone()})
	for range 2 {
		evs, closed := events(t, e.watch(t, metav1.ListOptions{ResourceVersion: l.ResourceVersion}), 10*time.Second)
		if !closed || len(evs) != 1 || !apierrors.IsResourceExpired(errorStatus(t, evs)) {
			t.Fatalf("watch from the compacted %s gave %v (closed %v), want one 410 and the end", l.ResourceVersion, types(evs), closed)
		}
	}
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "newer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"", "0"} {
		evs, _ := events(t, e.watch(t, metav1.ListOptions{ResourceVersion: from}), 2*time.Second)
		for _, ev := range evs {
			if ev.Type == watch.Error {
				t.Errorf("watch from %q: %v, want no expiry", from, ev.Object)
			}
		}
	}
	if c := e.p.Counts(); c.Faulted != 2 {
		t.Errorf("Faulted %d, want the 2 watches from the compacted resourceVersion", c.Faulted)
	}
}

func TestGoneAfterEventsBreaksStreamingList(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 10)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.WatchList}, Fault: faults.GoneAfterEvents(4), Count: 1})

			evs, closed := events(t, e.watch(t, streamingList()), 10*time.Second)
			if !closed {
				t.Fatalf("stream not ended: %v", types(evs))
			}
			want := []watch.EventType{watch.Added, watch.Added, watch.Added, watch.Added, watch.Error}
			if fmt.Sprint(types(evs)) != fmt.Sprint(want) {
				t.Fatalf("events %v, want %v", types(evs), want)
			}
			if se := errorStatus(t, evs); !apierrors.IsResourceExpired(se) {
				t.Errorf("ERROR event %v, want 410 Expired", se)
			}
			for _, ev := range evs[:4] {
				if _, ok := ev.Object.(*corev1.ConfigMap); !ok {
					t.Errorf("event object %T, want a ConfigMap", ev.Object)
				}
			}

			// Count 1: the next streaming list is whole (10 objects and the
			// bookmark that ends the initial events).
			evs, _ = events(t, e.watch(t, streamingList()), 3*time.Second)
			if len(evs) != 11 || evs[10].Type != watch.Bookmark {
				t.Errorf("second streaming list: %v, want 10 ADDED and a BOOKMARK", types(evs))
			}
		})
	}
}

func TestStatusCodes(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "protobuf")
	for _, tt := range []struct {
		code       int
		retryAfter time.Duration
		reason     metav1.StatusReason
	}{
		{429, 2 * time.Second, metav1.StatusReasonTooManyRequests},
		{500, 0, metav1.StatusReasonInternalError},
		{503, 1500 * time.Millisecond, metav1.StatusReasonServiceUnavailable},
		{504, 0, metav1.StatusReasonTimeout},
		{403, 0, metav1.StatusReasonForbidden},
	} {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			remove := e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.List}, Fault: faults.Status(tt.code, tt.retryAfter)})
			defer remove()
			err := e.listOnce()
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("list: %v, want a StatusError", err)
			}
			s := se.Status()
			if int(s.Code) != tt.code || s.Reason != tt.reason {
				t.Errorf("status %d %s, want %d %s", s.Code, s.Reason, tt.code, tt.reason)
			}
			delay, ok := apierrors.SuggestsClientDelay(err)
			wantDelay := int((tt.retryAfter + time.Second - 1) / time.Second)
			if ok != (tt.retryAfter > 0) || delay != wantDelay {
				t.Errorf("suggested delay %d %v, want %d", delay, ok, wantDelay)
			}
			if s.Details == nil || s.Details.Kind != "configmaps" {
				t.Errorf("details %+v, want the resource named", s.Details)
			}
		})
	}
}

func TestStatusRetryAfterHeaderDrivesClientGo(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "protobuf")
	// client-go's rest client retries a 429 carrying Retry-After: the header
	// is there and well-formed, and Count ends the fault.
	e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.List}, Fault: faults.Status(429, time.Second), Count: 1})
	start := time.Now()
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list after one 429: %v", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("list returned after %s, want client-go to have waited Retry-After (1s)", d)
	}
	if got := e.p.Counts().ByResourceVerb["configmaps"][faults.List]; got != 2 {
		t.Errorf("%d lists reached the proxy, want 2", got)
	}
}

func TestRuleCountSkipProbability(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "json")
	e.p.AddRule(faults.Rule{Match: faults.Match{Verb: faults.List, Namespace: e.ns}, Fault: faults.Status(500, 0), Skip: 1, Count: 2})
	var got []bool
	for range 5 {
		got = append(got, e.listOnce() != nil)
	}
	if want := []bool{false, true, true, false, false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("failed lists %v, want %v (skip 1, then 2)", got, want)
	}
	if c := e.p.Counts(); c.Faulted != 2 || c.ByVerb[faults.List] != 5 {
		t.Errorf("Faulted %d of %d lists, want 2 of 5", c.Faulted, c.ByVerb[faults.List])
	}

	remove := e.p.AddRule(faults.Rule{Match: faults.Match{Verb: faults.List}, Fault: faults.Status(503, 0), Probability: 0.5})
	failed := 0
	for range 40 {
		if e.listOnce() != nil {
			failed++
		}
	}
	remove()
	if failed < 8 || failed > 32 {
		t.Errorf("%d of 40 lists failed at probability 0.5", failed)
	}
	if err := e.listOnce(); err != nil {
		t.Errorf("list after remove: %v", err)
	}
}

func TestStall(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 3)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps"}, Fault: faults.Stall()})

			// A streaming list that stalls: headers, then silence.
			w := e.watch(t, streamingList())
			if evs, closed := events(t, w, quiet); len(evs) != 0 || closed {
				t.Fatalf("stalled watch gave %v (closed %v), want silence", types(evs), closed)
			}
			// A list with a client time-out gives up.
			start := time.Now()
			err := e.raw.Get().Namespace(e.ns).Resource("configmaps").Timeout(time.Second).MaxRetries(0).Do(e.ctx).Error()
			if err == nil || time.Since(start) < time.Second {
				t.Errorf("stalled list: %v after %s, want a time-out after 1s", err, time.Since(start))
			}
			// Closing the proxy ends the stalled stream.
			if err := e.p.Close(); err != nil {
				t.Fatal(err)
			}
			if _, closed := events(t, w, due); !closed {
				t.Error("stalled watch still open after Close")
			}
		})
	}
}

func TestCut(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 10)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps"}, Fault: faults.Cut(700)})

			err := e.listOnce()
			if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
				t.Errorf("cut list: %v, want an unexpected EOF", err)
			}
			// A cut stream ends without an ERROR event: client-go logs it at
			// verbosity 1 and closes the watch.
			evs, closed := events(t, e.watch(t, streamingList()), due)
			if !closed {
				t.Fatal("cut stream still open")
			}
			if len(evs) == 0 || len(evs) >= 10 {
				t.Errorf("cut stream delivered %d events, want some but not all 10", len(evs))
			}
			for _, ev := range evs {
				if ev.Type != watch.Added {
					t.Errorf("event %s in a cut stream, want only ADDED", ev.Type)
				}
			}
		})
	}
}

// A Cut or Truncate placed past the end of a body does not act: the client
// gets the whole body, and the request is not counted as faulted (a harness
// that checks every faulted request surfaced an error relies on it).
func TestCutPastTheBodyIsNotAFault(t *testing.T) {
	leakcheck.Check(t)
	for _, f := range []faults.Fault{faults.Cut(1 << 20), faults.Truncate(1 << 20)} {
		e := newEnv(t, "protobuf")
		e.seed(t, 3)
		remove := e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.List}, Fault: f})
		if err := e.listOnce(); err != nil {
			t.Errorf("%v past the body: %v, want the whole list", f, err)
		}
		if c := e.p.Counts(); c.Faulted != 0 || c.ByVerb[faults.List] != 1 {
			t.Errorf("%v past the body: Faulted %d of %d lists, want 0 of 1", f, c.Faulted, c.ByVerb[faults.List])
		}
		remove()
		e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.List}, Fault: faults.Cut(100)})
		if err := e.listOnce(); err == nil {
			t.Errorf("Cut(100) of a list of 3: decoded")
		}
		if c := e.p.Counts(); c.Faulted != 1 {
			t.Errorf("Cut(100) of a list of 3: Faulted %d, want 1", c.Faulted)
		}
	}
}

// A request under a Cut or Truncate is counted as faulted when the fault
// acts, not when it arrives: a harness that reads the counts while a body is
// still being read (a watch, or a short list the cut will miss) must not
// count a fault that has not happened and may never.
func TestCutCountedWhenItActs(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "protobuf")
	e.seed(t, 3)
	e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.Watch}, Fault: faults.Cut(1 << 20)})
	w := e.watch(t, metav1.ListOptions{})
	defer w.Stop()
	for range 3 {
		<-w.ResultChan()
	}
	if c := e.p.Counts(); c.Faulted != 0 || c.ByVerb[faults.Watch] != 1 {
		t.Errorf("a watch under Cut(1 MiB) that has sent 3 events: Faulted %d of %d watches, want 0 of 1", c.Faulted, c.ByVerb[faults.Watch])
	}
}

func TestTruncate(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 5)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.List}, Fault: faults.Truncate(300)})
			err := e.listOnce()
			if err == nil {
				t.Fatal("truncated list decoded")
			}
			if strings.Contains(err.Error(), "unexpected EOF") && enc == "json" {
				t.Errorf("truncated list: %v, want a decode error, not a broken connection", err)
			}
			if c := e.p.Counts(); c.BytesToClient != 300 {
				t.Errorf("BytesToClient = %d, want 300", c.BytesToClient)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 3)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps"}, Fault: faults.Malformed()})

			if err := e.listOnce(); err == nil {
				t.Error("malformed list decoded")
			}
			// client-go turns an undecodable watch frame into an ERROR event
			// with a 500 Status, then ends the watch.
			evs, closed := events(t, e.watch(t, streamingList()), due)
			if !closed || len(evs) != 1 {
				t.Fatalf("malformed stream gave %v (closed %v), want one ERROR and the end", types(evs), closed)
			}
			se := errorStatus(t, evs)
			if se.Status().Code != 500 || !strings.Contains(se.Error(), "unable to decode an event from the watch stream") {
				t.Errorf("ERROR event %v, want client-go's decode error", se)
			}
		})
	}
}

func TestSlow(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "json")
	e.seed(t, 10)
	// About 3 KB of JSON at 2 KB/s: more than a second.
	e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Verb: faults.List}, Fault: faults.Slow(2000)})
	start := time.Now()
	if err := e.listOnce(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	n := e.p.Counts().BytesToClient
	if want := time.Duration(float64(n-2000) / 2000 * float64(time.Second)); took < want {
		t.Errorf("%d bytes in %s, want at least %s at 2000 B/s", n, took, want)
	}
}

func TestEndWatches(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 3)
			// Every fault but the stall ends the stream: its end is waited
			// for (due); the stall is watched for quiet.
			for _, tt := range []struct {
				fault faults.Fault
				check func(t *testing.T, evs []watch.Event, closed bool)
			}{
				{faults.Gone(), func(t *testing.T, evs []watch.Event, closed bool) {
					if se := errorStatus(t, evs); !closed || !apierrors.IsResourceExpired(se) {
						t.Errorf("after EndWatches(Gone): %v closed %v, want 410 and the end", se, closed)
					}
				}},
				{faults.Status(500, 0), func(t *testing.T, evs []watch.Event, closed bool) {
					if se := errorStatus(t, evs); !closed || !apierrors.IsInternalError(se) {
						t.Errorf("after EndWatches(Status(500)): %v closed %v, want 500 and the end", se, closed)
					}
				}},
				{faults.Cut(0), func(t *testing.T, evs []watch.Event, closed bool) {
					if !closed || len(evs) != 0 {
						t.Errorf("after EndWatches(Cut): %v closed %v, want a silent end", types(evs), closed)
					}
				}},
				{faults.Malformed(), func(t *testing.T, evs []watch.Event, closed bool) {
					if se := errorStatus(t, evs); !closed || se.Status().Code != 500 {
						t.Errorf("after EndWatches(Malformed): %v closed %v, want a decode error and the end", se, closed)
					}
				}},
				{faults.Stall(), func(t *testing.T, evs []watch.Event, closed bool) {
					if closed || len(evs) != 0 {
						t.Errorf("after EndWatches(Stall): %v closed %v, want silence on an open stream", types(evs), closed)
					}
				}},
			} {
				t.Run(tt.fault.String(), func(t *testing.T) {
					list, err := e.cs.CoreV1().ConfigMaps(e.ns).List(e.ctx, metav1.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					w := e.watch(t, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
					// An event on the live stream first, to prove it streams.
					if _, err := srv.Clientset().CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "live-"}}, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					if ev := <-w.ResultChan(); ev.Type != watch.Added {
						t.Fatalf("first event %v, want ADDED", ev.Type)
					}
					if n := e.p.EndWatches(faults.Match{Resource: "configmaps", Namespace: e.ns, Verb: faults.Watch}, tt.fault); n != 1 {
						t.Fatalf("EndWatches acted on %d streams, want 1", n)
					}
					// Events written after the fault must not reach the client.
					if _, err := srv.Clientset().CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "late-"}}, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					wait := due
					if tt.fault.String() == faults.Stall().String() {
						wait = quiet
					}
					evs, closed := events(t, w, wait)
					tt.check(t, evs, closed)
				})
			}
			if n := e.p.EndWatches(faults.Match{Namespace: "no-such-namespace"}, faults.Gone()); n != 0 {
				t.Errorf("EndWatches on another namespace acted on %d streams", n)
			}
		})
	}
}

// TestCountsPerSecond checks that each request is counted in the second of
// its arrival: three lists at once, then one more than a second later. When
// each request arrived is known only to the span between sending it and
// reading its answer (on a loaded machine that span can cross a second), so
// each second's count is checked to lie between the requests certainly in it
// and those that may be; on a quiet machine both are the same, 3 then 1.
func TestCountsPerSecond(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "json")
	type span struct{ from, to time.Time }
	var spans []span
	list := func() {
		from := time.Now()
		_ = e.listOnce()
		spans = append(spans, span{from, time.Now()})
	}
	resetFrom := time.Now()
	e.p.ResetCounts()
	resetTo := time.Now()
	for range 3 {
		list()
	}
	time.Sleep(time.Until(resetTo.Add(1100 * time.Millisecond))) // into the next second
	list()

	c := e.p.Counts()
	if c.Requests != 4 {
		t.Errorf("Requests = %d, want 4", c.Requests)
	}
	// A request arrived in a second from the earliest its arrival can be
	// after the reset to the latest.
	second := func(at, reset time.Time) int { return int(at.Sub(reset) / time.Second) }
	total, most := 0, 0
	for i, n := range c.PerSecond {
		surely, maybe := 0, 0
		for _, s := range spans {
			lo, hi := second(s.from, resetTo), second(s.to, resetFrom)
			if lo <= i && i <= hi {
				maybe++
				if lo == hi {
					surely++
				}
			}
		}
		if n < surely || n > maybe {
			t.Errorf("PerSecond[%d] = %d, want %d to %d (PerSecond %v)", i, n, surely, maybe, c.PerSecond)
		}
		total += n
		most = max(most, n)
	}
	if last := spans[len(spans)-1]; total != 4 || len(c.PerSecond) <= second(last.from, resetTo) {
		t.Errorf("PerSecond %v: want 4 requests, the last in second %d or later", c.PerSecond, second(last.from, resetTo))
	}
	if c.MaxPerSecond() != most {
		t.Errorf("MaxPerSecond = %d, want %d, the largest of %v", c.MaxPerSecond(), most, c.PerSecond)
	}
}

// TestEndWatchesForcesInformerRelist is how cachebench forces a re-list: an
// informer whose watch ends with 410 Gone lists again.
func TestEndWatchesForcesInformerRelist(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "protobuf")
	e.seed(t, 5)
	ctx, cancel := context.WithCancel(e.ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace(e.ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	factory.Start(ctx.Done())
	defer factory.Shutdown() // after cancel: Shutdown waits for the informers to stop
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer never synced")
	}
	lists := func() int {
		c := e.p.Counts().ByResourceVerb["configmaps"]
		return c[faults.List] + c[faults.WatchList]
	}
	before := lists()
	deadline := time.Now().Add(due)
	// The informer may still be between its list and its watch: retry until
	// a watch is live.
	for e.p.EndWatches(faults.Match{Resource: "configmaps"}, faults.Gone()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no live watch to end")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for lists() == before {
		if time.Now().After(deadline) {
			t.Fatalf("no re-list after 410 Gone (%d lists)", before)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(inf.GetStore().ListKeys()); n != 5 {
		t.Errorf("store holds %d objects after the re-list, want 5", n)
	}
}

func TestAnswerJSON(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, "protobuf")
	e.seed(t, 2)
	e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: e.ns}, Fault: faults.AnswerJSON()})
	// The protobuf-only client asked for protobuf and gets JSON: its decoder
	// refuses the body by its content type.
	res := e.raw.Get().Namespace(e.ns).Resource("configmaps").MaxRetries(0).Do(e.ctx)
	var ct string
	res.ContentType(&ct)
	if res.Error() != nil || !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("list through AnswerJSON: content type %q, error %v; want a JSON answer", ct, res.Error())
	}
	raw, _ := res.Raw()
	if !strings.HasPrefix(string(raw), "{") {
		t.Fatalf("body starts with %q, want JSON", raw[:min(len(raw), 8)])
	}
	// Watches are answered in JSON too.
	body, err := e.raw.Get().Namespace(e.ns).Resource("configmaps").Param("watch", "true").
		SetHeader("Accept", "application/vnd.kubernetes.protobuf;stream=watch").Stream(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	first := make([]byte, 1)
	if _, err := body.Read(first); err != nil || first[0] != '{' {
		t.Fatalf("watch through AnswerJSON starts with %q (%v), want JSON", first, err)
	}
}

func TestDropInitialEventsEnd(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 3)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: e.ns, Verb: faults.WatchList}, Fault: faults.DropInitialEventsEnd()})
			w := e.watch(t, streamingList())
			evs, closed := eventsUntil(t, w, 3, due)
			if !closed {
				more, end := events(t, w, quiet) // no bookmark after them
				evs, closed = append(evs, more...), end
			}
			if closed {
				t.Fatal("the stream ended; it should carry on as a watch")
			}
			if got := types(evs); len(got) != 3 || got[0] != watch.Added || got[2] != watch.Added {
				t.Fatalf("events %v, want the 3 initial ADDED events and no bookmark", got)
			}
			// Plain watches are left alone.
			c := e.p.Counts().ByResourceVerb["configmaps"]
			if c[faults.WatchList] != 1 || e.p.Counts().Faulted != 1 {
				t.Errorf("counts %v faulted %d, want one faulted streaming list", c, e.p.Counts().Faulted)
			}
		})
	}
}

func TestTruncateAfterItems(t *testing.T) {
	leakcheck.Check(t)
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t, enc)
			e.seed(t, 5)
			e.p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: e.ns, Verb: faults.List}, Fault: faults.TruncateAfterItems(2)})
			body, err := e.raw.Get().Namespace(e.ns).Resource("configmaps").MaxRetries(0).DoRaw(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if enc == "json" {
				if !strings.HasPrefix(string(body), "{") || strings.HasSuffix(strings.TrimSpace(string(body)), "}") {
					t.Fatalf("JSON body of %d bytes is not cut mid-document", len(body))
				}
				return
			}
			// client-go's protobuf decoder checks the envelope's declared
			// length: the cut body is an error, never a list of 2.
			var list corev1.ConfigMapList
			err = e.raw.Get().Namespace(e.ns).Resource("configmaps").MaxRetries(0).Do(e.ctx).Into(&list)
			if err == nil {
				t.Fatalf("a body cut after 2 items decoded as %d items without an error", len(list.Items))
			}
		})
	}
}
