package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cachetune/cachetune/controllerruntime/internal/testenv"
	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/leakcheck"
)

var cfg *rest.Config

// One envtest for the package, on the locally built binaries.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		env := &envtest.Environment{}
		var err error
		if cfg, err = testenv.Start(ctx, env); err != nil {
			fmt.Fprintln(os.Stderr, "start envtest:", err)
			return 1
		}
		defer func() {
			if err := env.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stop envtest:", err)
			}
		}()
		if err := implementModes(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

func TestUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), nil, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: cachebench-cr child") {
		t.Errorf("no arguments: exit %d, stderr %q; want 2 and the usage", code, stderr.String())
	}
	// A child whose parent sends nothing fails with the protocol's error.
	stderr.Reset()
	if code := run(context.Background(), []string{"child"}, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "start line") {
		t.Errorf("no start line: exit %d, stderr %q; want 1 and the protocol's error", code, stderr.String())
	}
}

// TestEveryModeImplemented checks that this program and cachebench's registry
// agree: every controller-runtime mode has a flavour here.
func TestEveryModeImplemented(t *testing.T) {
	n := 0
	for _, m := range bench.Modes() {
		if m.Program != bench.ControllerRuntime {
			continue
		}
		n++
		if _, ok := flavours[m.Name]; !ok {
			t.Errorf("mode %s has no flavour", m.Name)
		}
	}
	if n == 0 || n != len(flavours) {
		t.Errorf("%d registered modes, %d flavours", n, len(flavours))
	}
}

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// TestModes starts each mode's manager on a namespace of Pods, as the child
// does, and reads them back through the manager's client: typed, and
// unstructured (the dynamic path, for custom resources beside built-in ones).
func TestModes(t *testing.T) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cachebench-cr-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	const n = 12
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Pod"}`}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range bench.Modes() {
		if m.Program != bench.ControllerRuntime {
			continue
		}
		for _, dynamic := range []bool{false, true} {
			start, what := m.Start, "typed"
			if dynamic {
				start, what = m.Dynamic, "unstructured"
			}
			t.Run(m.Name+"/"+what, func(t *testing.T) {
				leakcheck.Check(t)
				var adds atomic.Int64
				c, err := start(ctx, bench.Env{
					Config: cfg, Namespace: ns.Name, Resource: pods, Streaming: true,
					Handler: toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { adds.Add(1) }},
				})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Stop()
				deadline := time.Now().Add(time.Minute)
				for !c.HasSynced() {
					if time.Now().After(deadline) {
						t.Fatal("the cache did not sync in a minute")
					}
					time.Sleep(20 * time.Millisecond)
				}
				if got := c.Len(); got != n || adds.Load() != n {
					t.Errorf("cached %d Pods and delivered %d adds, want %d", got, adds.Load(), n)
				}
				held := 0
				got, err := c.ReconcileList(ctx, func() { held++ })
				if err != nil || got != n || held != 1 {
					t.Errorf("reconcile list read %d Pods (error %v), held called %d times; want %d, once", got, err, held, n)
				}
				lean := strings.Contains(m.Name, "leancache")
				if (c.Lists != nil) != lean || (c.ListPath != nil) != lean {
					t.Fatalf("Lists and ListPath set %v and %v; want them for leancache's modes only", c.Lists != nil, c.ListPath != nil)
				}
				if lean && (c.Lists() < 1 || c.ListPath() == "") {
					t.Errorf("leancache reports %d lists by %q, want one at least and its path", c.Lists(), c.ListPath())
				}
			})
		}
	}
}
