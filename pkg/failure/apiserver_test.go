package failure_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/failure"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

// realError is one error obtained from the real API server, and the class it
// must get.
type realError struct {
	name      string
	get       func(t *testing.T, ctx context.Context, ns string) error
	cause     failure.Reason
	code      int
	transient bool
	permanent bool
}

func configMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": value}}
}

// through returns a clientset behind a fresh fault proxy with one rule, in
// the given content type.
func through(t *testing.T, r faults.Rule, contentType string) kubernetes.Interface {
	t.Helper()
	p, err := faults.Start(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.AddRule(r)
	cfg := p.Config(srv.Config)
	cfg.ContentType, cfg.AcceptContentTypes = contentType, contentType
	return kubernetes.NewForConfigOrDie(cfg)
}

const (
	jsonType  = "application/json"
	protoType = "application/vnd.kubernetes.protobuf"
)

var realErrors = []realError{
	{name: "404 get", cause: failure.NotFound, code: 404, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := srv.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "missing", metav1.GetOptions{})
			return err
		}},
	{name: "409 resourceVersion conflict", cause: failure.Conflict, code: 409, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cms := srv.Clientset().CoreV1().ConfigMaps(ns)
			cm, err := cms.Create(ctx, configMap("rv", "1"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			stale := cm.DeepCopy()
			cm.Data["k"] = "2"
			if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			stale.Data["k"] = "3"
			_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
			return err
		}},
	{name: "409 server-side apply conflict", cause: failure.FieldManagerConflict, code: 409, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cms := srv.Clientset().CoreV1().ConfigMaps(ns)
			apply := func(manager, value string) error {
				_, err := cms.Apply(ctx, applycorev1.ConfigMap("ssa", ns).WithData(map[string]string{"k": value}), metav1.ApplyOptions{FieldManager: manager})
				return err
			}
			if err := apply("first", "1"); err != nil {
				t.Fatal(err)
			}
			return apply("second", "2")
		}},
	{name: "409 already exists", cause: failure.AlreadyExists, code: 409, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cms := srv.Clientset().CoreV1().ConfigMaps(ns)
			if _, err := cms.Create(ctx, configMap("twice", "1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := cms.Create(ctx, configMap("twice", "1"), metav1.CreateOptions{})
			return err
		}},
	{name: "403 restricted identity", cause: failure.Forbidden, code: 403, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := kubernetes.NewForConfigOrDie(srv.RestrictedConfig).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "422 invalid object", cause: failure.Invalid, code: 422, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := srv.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, configMap("Not_A_DNS_Name", "1"), metav1.CreateOptions{})
			return err
		}},
	{name: "400 bad selector", cause: failure.BadRequest, code: 400, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := srv.Clientset().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "a in (b"})
			return err
		}},
	{name: "400 patch renaming the object", cause: failure.BadRequest, code: 400, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cms := srv.Clientset().CoreV1().ConfigMaps(ns)
			if _, err := cms.Create(ctx, configMap("patched", "1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := cms.Patch(ctx, "patched", types.MergePatchType, []byte(`{"metadata":{"name":"other"}}`), metav1.PatchOptions{})
			return err
		}},
	{name: "410 watch ERROR event (through the proxy)", cause: failure.Gone, code: 410, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cs := through(t, faults.Rule{Fault: faults.Gone()}, protoType)
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ev := <-w.ResultChan()
			if ev.Type != watch.Error {
				t.Fatalf("event %s, want ERROR", ev.Type)
			}
			return apierrors.FromObject(ev.Object)
		}},
	{name: "429 (through the proxy)", cause: failure.TooManyRequests, code: 429, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cs := through(t, faults.Rule{Fault: faults.Status(429, 0)}, protoType)
			_, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "503 (through the proxy)", cause: failure.ServiceUnavailable, code: 503, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := through(t, faults.Rule{Fault: faults.Status(503, 0)}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "504 (through the proxy)", cause: failure.GatewayTimeout, code: 504, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := through(t, faults.Rule{Fault: faults.Status(504, 0)}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "500 (through the proxy)", cause: failure.InternalError, code: 500, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := through(t, faults.Rule{Fault: faults.Status(500, 0)}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "malformed JSON body", cause: failure.Decode, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := through(t, faults.Rule{Fault: faults.Malformed()}, jsonType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "malformed protobuf body", cause: failure.Decode, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := through(t, faults.Rule{Fault: faults.Malformed()}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "truncated JSON body", cause: failure.Decode, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := through(t, faults.Rule{Fault: faults.Truncate(20)}, jsonType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "truncated protobuf body", cause: failure.Decode, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			if _, err := srv.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, configMap("big", strings.Repeat("x", 500)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := through(t, faults.Rule{Fault: faults.Truncate(200)}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "malformed watch frame", cause: failure.Decode, code: 500, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			w, err := through(t, faults.Rule{Fault: faults.Malformed()}, protoType).CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			return apierrors.FromObject((<-w.ResultChan()).Object)
		}},
	{name: "connection cut mid-body", cause: failure.Network, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			_, err := through(t, faults.Rule{Fault: faults.Cut(10)}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "connection refused", cause: failure.Network, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cfg := rest.CopyConfig(srv.Config)
			cfg.Host = "https://127.0.0.1:1"
			_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "unknown certificate authority", cause: failure.TLS, permanent: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cfg := rest.CopyConfig(srv.Config)
			cfg.CAData, cfg.CAFile = nil, ""
			_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "client time-out on a stalled body", cause: failure.Timeout, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			cs := through(t, faults.Rule{Fault: faults.Stall()}, protoType)
			return cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").Timeout(300 * time.Millisecond).Do(ctx).Error()
		}},
	{name: "context deadline on a stalled body", cause: failure.Timeout, transient: true,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, err := through(t, faults.Rule{Fault: faults.Stall()}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
	{name: "context cancelled", cause: failure.Canceled,
		get: func(t *testing.T, ctx context.Context, ns string) error {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(300*time.Millisecond, cancel)
			_, err := through(t, faults.Rule{Fault: faults.Stall()}, protoType).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
}

func TestClassifyRealErrors(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	for _, tt := range realErrors {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.get(t, ctx, ns)
			if err == nil {
				t.Fatal("no error")
			}
			c := failure.Classify(err)
			if c.Cause != tt.cause || c.Code != tt.code || c.Transient != tt.transient || c.Permanent != tt.permanent {
				t.Errorf("Classify(%v) = %+v, want cause %s code %d transient %v permanent %v", err, c, tt.cause, tt.code, tt.transient, tt.permanent)
			}
			// Wrapped as a watcher failure, the cause and its policy survive.
			w := failure.Classify(failure.Watcher(failure.InitialListFailed, "configmaps", err))
			if w.Reason != failure.InitialListFailed || w.Cause != tt.cause || w.Permanent != tt.permanent {
				t.Errorf("as a watcher failure: %+v", w)
			}
		})
	}
}
