package controller_test

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	demov1 "github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/api/v1"
	"github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/internal/controller"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestAppConfig runs the operator's manager, leanstore cache and all, and
// walks an AppConfig through its life: waiting for its Secret, rendered once
// the Secret exists (the metadata-only watch wakes it), following a change of
// the Secret and of its own spec.
func TestAppConfig(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, lean, err := controller.NewManager(ctx, cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	defer func() { cancel(); wg.Wait() }()

	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "appconfig-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	app := &demov1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
		Spec:       demov1.AppConfigSpec{Data: map[string]string{"LOG_LEVEL": "info"}, SecretName: "creds"},
	}
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(app)
	status := func(want demov1.AppConfigStatus) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			var got demov1.AppConfig
			if err := c.Get(ctx, key, &got); err != nil {
				return false, err
			}
			return got.Status == want, nil
		}
	}
	eventually(t, "WaitingForSecret", status(demov1.AppConfigStatus{Phase: demov1.PhaseWaitingForSecret, ObservedGeneration: 1}))

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns.Name}, StringData: map[string]string{"password": "a"}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Ready with the Secret's version", status(demov1.AppConfigStatus{
		Phase: demov1.PhaseReady, ConfigMap: "web", SecretVersion: secret.ResourceVersion, ObservedGeneration: 1,
	}))
	configMap := func(data map[string]string, secretVersion string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, key, &cm); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			owned := len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].Name == "web"
			return owned && maps.Equal(cm.Data, data) && cm.Annotations[controller.SecretVersionAnnotation] == secretVersion &&
				cm.Labels[controller.ManagedByLabel] == controller.ManagedBy, nil
		}
	}
	eventually(t, "the rendered ConfigMap", configMap(map[string]string{"LOG_LEVEL": "info"}, secret.ResourceVersion))

	secret.StringData = map[string]string{"password": "b"}
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap to follow the Secret", configMap(map[string]string{"LOG_LEVEL": "info"}, secret.ResourceVersion))

	// A merge patch, not an update: the operator writes the status meanwhile.
	if err := c.Get(ctx, key, app); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(app.DeepCopy())
	app.Spec.Data = map[string]string{"LOG_LEVEL": "debug"}
	if err := c.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap to follow the spec", configMap(map[string]string{"LOG_LEVEL": "debug"}, secret.ResourceVersion))

	// What the cache is made of: leanstore informers, one of them metadata-only.
	want := map[string]string{
		"appconfig/appconfigs.demo.cachetune.dev": string(leanstore.WireJSON),
		"appconfig/configmaps":                    string(leanstore.WireProtobuf),
		"appconfig:metadata/secrets":              string(leanstore.WireProtobuf),
	}
	got := map[string]string{}
	for _, st := range lean.Status() {
		got[st.Informer] = st.Wire
	}
	if !maps.Equal(got, want) {
		t.Errorf("informers %v, want %v", got, want)
	}
	for _, inf := range lean.Informers() {
		for _, obj := range inf.GetStore().List() {
			m, _ := obj.(metav1.Object)
			if m == nil || len(m.GetManagedFields()) > 0 {
				t.Errorf("%s holds %T with managedFields", inf.Name(), obj)
			}
		}
	}
	if err := lean.Checker()(&http.Request{}); err != nil {
		t.Errorf("readiness: %v", err)
	}
}
