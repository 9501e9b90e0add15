package apiserver_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestCreateListWatch(t *testing.T) {
	leakcheck.Check(t)
	ctx := ctxFor(t)
	ns := srv.NewNamespace(t)
	cs := srv.Clientset()

	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + string(rune('a'+i))}, Data: map[string]string{"k": "v"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("listed %d configmaps, want 3", len(list.Items))
	}
	for i := range 3 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Fatalf("event %d: got %s, want ADDED", i, ev.Type)
			}
		case <-ctx.Done():
			t.Fatalf("only %d of 3 watch events arrived", i)
		}
	}
}

// TestStreamingList checks that the server serves streaming lists: a watch with
// sendInitialEvents sends every existing object, then a bookmark that marks the
// end of the initial events.
func TestStreamingList(t *testing.T) {
	leakcheck.Check(t)
	ctx := ctxFor(t)
	ns := srv.NewNamespace(t)
	cs := srv.Clientset()
	for _, name := range []string{"a", "b", "c", "d"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	send := true
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    &send,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	added := 0
	for {
		select {
		case ev := <-w.ResultChan():
			switch ev.Type {
			case watch.Added:
				added++
			case watch.Bookmark:
				cm := ev.Object.(*corev1.ConfigMap)
				if cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
					continue
				}
				if added != 4 {
					t.Fatalf("initial events ended after %d objects, want 4", added)
				}
				return
			default:
				t.Fatalf("unexpected %s event: %v", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatalf("no initial-events-end bookmark after %d objects", added)
		}
	}
}

func TestRestrictedIdentityIsForbidden(t *testing.T) {
	leakcheck.Check(t)
	ctx := ctxFor(t)
	ns := srv.NewNamespace(t)
	restricted, err := kubernetes.NewForConfig(srv.RestrictedConfig)
	if err != nil {
		t.Fatal(err)
	}
	_, err = restricted.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("restricted list of pods: got %v, want 403 Forbidden", err)
	}

	// Grant configmaps only: they become readable, pods stay forbidden.
	cs := srv.Clientset()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-configmaps"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: apiserver.RestrictedUser}},
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer learns of the binding from its informers: wait until it
	// allows the list (bounded by the test's context), then list for real.
	if err := apiserver.AwaitAccess(ctx, srv.RestrictedConfig, apiserver.ReadAccess(ns, "", "configmaps")...); err != nil {
		t.Fatal(err)
	}
	if _, err := restricted.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("restricted list of granted configmaps: %v", err)
	}
	if _, err := restricted.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("restricted watch of pods: got %v, want 403 Forbidden", err)
	}
}

// TestExtraArgsAndCleanStop starts a second server with streaming lists switched
// off on the server, checks the flag took effect, stops it and checks that neither
// the process nor its directory is left behind.
func TestExtraArgsAndCleanStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second server")
	}
	ctx := ctxFor(t)
	s, err := apiserver.Start(ctx, apiserver.Options{ExtraArgs: []string{"--feature-gates=WatchList=false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	send := true
	w, err := s.Clientset().CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{
		SendInitialEvents: &send, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err == nil {
		w.Stop()
		t.Fatal("streaming list accepted by a server started with WatchList=false")
	}

	dir := s.Dir()
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := syscall.Kill(s.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("server process %d still exists after Stop (kill -0: %v)", s.PID, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("working directory %s left behind (stat: %v)", dir, err)
	}
}
