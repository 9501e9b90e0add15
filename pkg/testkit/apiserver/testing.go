package apiserver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Main starts one server for a test binary, stores it in *srv, runs the tests and
// stops the server. Use it from TestMain; it returns the exit code for os.Exit.
// With -short, no server is started and *srv stays nil: tests that need it
// should call Skip.
func Main(m *testing.M, opts Options, srv **Server) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	if opts.Progress == nil {
		opts.Progress = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	s, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: %v\n", err)
		return 1
	}
	*srv = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

var nsSeq atomic.Int64

// NewNamespace creates a namespace named after the test and returns its name. The
// namespace is left in place when the test ends: without a controller manager, a
// deleted namespace would stay Terminating anyway, and the server is thrown away
// with all its data when the test binary ends.
//
// On a nil Server (tests run with -short, see Main) it skips the test.
func (s *Server) NewNamespace(t testing.TB) string {
	t.Helper()
	if s == nil {
		t.Skip("needs the local kube-apiserver, which -short does not start")
	}
	name := namespaceName(t.Name(), nsSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.Clientset().CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// namespaceName turns a test name into a valid, unique namespace name.
func namespaceName(test string, seq int64) string {
	n := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(test), "-"), "-")
	suffix := fmt.Sprintf("-%d", seq)
	if max := 63 - len(suffix); len(n) > max {
		n = strings.TrimRight(n[:max], "-")
	}
	return n + suffix
}

// Clientset returns a clientset for the admin identity, created once.
func (s *Server) Clientset() kubernetes.Interface {
	s.csOnce.Do(func() { s.cs = kubernetes.NewForConfigOrDie(s.Config) })
	return s.cs
}

type lazyClientset struct {
	csOnce sync.Once
	cs     kubernetes.Interface
}
