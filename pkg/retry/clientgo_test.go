package retry_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/retry"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

// behindProxy returns a proxy in front of the real server, a namespace, and
// a clientset through the proxy: with the retry transport when opts is not
// nil, plain client-go otherwise.
func behindProxy(t *testing.T, opts []retry.Option) (*faults.Proxy, string, kubernetes.Interface) {
	t.Helper()
	if srv == nil {
		t.Skip("no API server (-short)")
	}
	p, err := faults.Start(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg := p.Config(srv.Config)
	if opts != nil {
		if err := retry.Wrap(cfg, opts...); err != nil {
			t.Fatal(err)
		}
	}
	return p, srv.NewNamespace(t), kubernetes.NewForConfigOrDie(cfg)
}

func lists(p *faults.Proxy) int { return p.Counts().ByResourceVerb["configmaps"][faults.List] }

func TestClientGo429ThenSuccess(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		opts      []retry.Option
		wantErr   bool
		wantLists int
	}{
		// Without Retry-After, client-go itself gives up at once.
		{"client-go alone", nil, true, 1},
		{"with the retry transport", []retry.Option{fast}, false, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, ns, cs := behindProxy(t, tt.opts)
			p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: ns, Verb: faults.List}, Fault: faults.Status(429, 0), Count: 2})
			_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if (err != nil) != tt.wantErr || (err != nil && !apierrors.IsTooManyRequests(err)) {
				t.Errorf("list: %v, want error %v", err, tt.wantErr)
			}
			if got := lists(p); got != tt.wantLists {
				t.Errorf("%d lists reached the server, want %d", got, tt.wantLists)
			}
		})
	}
}

// TestNoDoubleRetries proves that with the transport installed, a request
// that keeps getting 429 with Retry-After is sent exactly as many times as
// the transport allows: client-go's own Retry-After loop (10 retries) does
// not multiply it.
func TestNoDoubleRetries(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	var w waits
	p, ns, cs := behindProxy(t, []retry.Option{fast, retry.WithMaxAttempts(3), w.option()})
	p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: ns}, Fault: faults.Status(429, time.Second)})
	start := time.Now()
	_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	took := time.Since(start)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("list: %v, want 429", err)
	}
	if got := lists(p); got != 3 {
		t.Errorf("%d lists reached the server, want exactly the 3 attempts configured", got)
	}
	// Two waits of Retry-After, 1s, by the transport, and no retry by
	// client-go (the count above): it would send a fourth list.
	if got := w.all(); len(got) != 2 || got[0] != time.Second || got[1] != time.Second || took < 2*time.Second {
		t.Errorf("gave up after %s with waits %v, want two of Retry-After's 1s", took, got)
	}
	// The caller still learns the server's delay.
	if d, ok := failure.RetryAfter(err); !ok || d != time.Second {
		t.Errorf("RetryAfter(err) = %s %v, want 1s", d, ok)
	}
}

// TestClientGoAloneRetriesTenTimes is the baseline the transport replaces:
// client-go's rest client retries a 429 with Retry-After 10 times, at the
// server's fixed interval, without backoff or jitter.
func TestClientGoAloneRetriesTenTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 10s")
	}
	leakcheck.Check(t)
	p, ns, cs := behindProxy(t, nil)
	p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: ns}, Fault: faults.Status(429, time.Second)})
	_, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("list: %v, want 429", err)
	}
	if got := lists(p); got != 11 {
		t.Errorf("%d lists reached the server, want 11 (client-go's 10 retries)", got)
	}
}

// TestClientGoKeepsWhatTheTransportLeaves: a watch, and a 500 with
// Retry-After, are not the transport's; client-go's own Retry-After handling
// still retries them once each here.
func TestClientGoKeepsWhatTheTransportLeaves(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	p, ns, cs := behindProxy(t, []retry.Option{fast})

	p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: ns, Verb: faults.Watch}, Fault: faults.Status(429, time.Second), Count: 1})
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch after one 429: %v", err)
	}
	w.Stop()
	if got := p.Counts().ByResourceVerb["configmaps"][faults.Watch]; got != 2 {
		t.Errorf("%d watch requests, want 2: client-go's retry, not the transport's", got)
	}

	p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: ns, Verb: faults.List}, Fault: faults.Status(500, time.Second), Count: 1})
	if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list after one 500 with Retry-After: %v", err)
	}
	if got := lists(p); got != 2 {
		t.Errorf("%d lists, want 2: client-go retries 500 with Retry-After", got)
	}
}

func TestCallWithTimeout(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	p, ns, cs := behindProxy(t, nil)

	// A call that answers in time is untouched, errors included.
	err := retry.CallWithTimeout(ctx, 5*time.Second, "get configmap missing", func(ctx context.Context) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "missing", metav1.GetOptions{})
		return err
	})
	if !apierrors.IsNotFound(err) {
		t.Errorf("fast call: %v, want the 404 itself", err)
	}

	// A call that hangs becomes a transient timeout naming the call.
	p.AddRule(faults.Rule{Match: faults.Match{Resource: "configmaps", Namespace: ns, Verb: faults.Get}, Fault: faults.Stall()})
	start := time.Now()
	cm, err := retry.ValueWithTimeout(ctx, 300*time.Millisecond, "get configmap "+ns+"/slow", func(ctx context.Context) (any, error) {
		return cs.CoreV1().ConfigMaps(ns).Get(ctx, "slow", metav1.GetOptions{})
	})
	// Without the time-out the stalled call would hang until the proxy
	// closes: 30 times the time-out still tells the two apart on a loaded
	// machine.
	if took := time.Since(start); took > 30*300*time.Millisecond {
		t.Errorf("stalled call returned after %s, want about 300ms", took)
	}
	var fe *failure.Error
	if !errors.As(err, &fe) || fe.Call != "get configmap "+ns+"/slow" || fe.Reason != failure.Timeout {
		t.Fatalf("stalled call: %v (%T), want a *failure.Error naming the call", err, err)
	}
	if c := failure.Classify(err); !c.Transient || c.Layer != failure.LayerClient {
		t.Errorf("class %s, want client timeout, transient", c)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	_ = cm

	// When the caller's own context ends, the error is the caller's.
	parent, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err = retry.CallWithTimeout(parent, 5*time.Second, "get configmap", func(ctx context.Context) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "slow", metav1.GetOptions{})
		return err
	})
	if errors.As(err, &fe) || err == nil {
		t.Errorf("call under an ended parent: %v, want the plain error", err)
	}
}
