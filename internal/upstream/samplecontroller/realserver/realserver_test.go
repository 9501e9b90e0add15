package realserver_test

import (
	"context"
	_ "embed"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	samplev1alpha1 "k8s.io/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	clientset "k8s.io/sample-controller/pkg/generated/clientset/versioned"
	informers "k8s.io/sample-controller/pkg/generated/informers/externalversions"

	"github.com/cachetune/cachetune/internal/leakcheck"
	samplecontroller "github.com/cachetune/cachetune/internal/upstream/samplecontroller"
	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// The fake-clientset tests in controller_test.go never reach leanstore's own list
// and watch: a fake has no REST client, so leanstore hands them client-go's
// informer. This package runs the same controller against a real kube-apiserver,
// where the Deployment informer lists and watches through leanstore.
//
// It is a package of its own so that its goroutine check sees only its own
// informers: the upstream tests leave theirs running (their contexts never end).
// Run it once per test binary (-count=1, as make test does): NewController adds
// sample-controller's types to client-go's global scheme on every call, which
// races with the event recorder of a controller from an earlier run.

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

//go:embed testdata/crd-status-subresource.yaml
var fooCRD []byte

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestControllerOnRealAPIServer runs sample-controller as its main.go does, with
// the Deployment informer from leanstore's typed factory: a Foo gets its
// Deployment, a change of the Deployment's status reaches the Foo's status, and a
// change of the Foo's replicas reaches the Deployment. Each step needs an event
// from leanstore's watch and a read from its lister.
func TestControllerOnRealAPIServer(t *testing.T) {
	leakcheck.Check(t)
	ns := srv.NewNamespace(t)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	installCRD(t, ctx, dynamic.NewForConfigOrDie(srv.Config))

	kubeClient := kubernetes.NewForConfigOrDie(srv.Config)
	sampleClient := clientset.NewForConfigOrDie(srv.Config)
	// As in sample-controller's main.go (30 s resyncs), scoped to the test's namespace.
	kubeFactory := leanstore.NewSharedInformerFactory(kubeClient, 30*time.Second, leanstore.WithNamespace(ns))
	sampleFactory := informers.NewSharedInformerFactoryWithOptions(sampleClient, 30*time.Second, informers.WithNamespace(ns))
	deployments := kubeFactory.Apps().V1().Deployments()
	controller := samplecontroller.NewController(ctx, kubeClient, sampleClient, deployments, sampleFactory.Samplecontroller().V1alpha1().Foos())

	runCtx, stop := context.WithCancel(ctx)
	kubeFactory.Start(runCtx.Done())
	sampleFactory.Start(runCtx.Done())
	done := make(chan error, 1)
	go func() { done <- controller.Run(runCtx, 2) }()
	defer func() {
		// Run returns once its context ends, without waiting for its workers
		// (upstream's design): a sync cut short may still log "context canceled".
		stop()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		kubeFactory.Shutdown()
		sampleFactory.Shutdown()
	}()

	foos := sampleClient.SamplecontrollerV1alpha1().Foos(ns)
	foo, err := foos.Create(ctx, &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: "example-foo"},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: "example-foo", Replicas: ptr.To[int32](1)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Foo: %v", err)
	}

	// 1. The controller creates the Deployment, owned by the Foo, and then
	// updates the Foo's status; the Synced event is recorded after that update.
	var dep *appsv1.Deployment
	poll(t, ctx, "the Deployment of Foo example-foo", func() (bool, error) {
		dep, err = kubeClient.AppsV1().Deployments(ns).Get(ctx, "example-foo", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if !metav1.IsControlledBy(dep, foo) {
		t.Fatalf("Deployment example-foo is not controlled by Foo example-foo: owners %v", dep.OwnerReferences)
	}
	if got := *dep.Spec.Replicas; got != 1 {
		t.Errorf("Deployment example-foo: %d replicas, want 1", got)
	}
	poll(t, ctx, "the Synced event of Foo example-foo", func() (bool, error) {
		evs, err := kubeClient.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "Foo", "involvedObject.name": "example-foo", "reason": samplecontroller.SuccessSynced,
		}.String()})
		return err == nil && len(evs.Items) > 0, err
	})

	// 2. Play the deployment controller (the test server runs none): one replica
	// available. The controller hears of it through leanstore's watch, reads the
	// Deployment from leanstore's lister and copies the count into the Foo.
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if _, err := kubeClient.AppsV1().Deployments(ns).UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update the status of Deployment example-foo: %v", err)
	}
	poll(t, ctx, "Foo example-foo's status.availableReplicas to be 1", func() (bool, error) {
		got, err := foos.Get(ctx, "example-foo", metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 1, err
	})

	// 3. Scale the Foo: the controller compares it with the cached Deployment and
	// updates the Deployment.
	poll(t, ctx, "Foo example-foo scaled to 2", func() (bool, error) {
		cur, err := foos.Get(ctx, "example-foo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur.Spec.Replicas = ptr.To[int32](2)
		_, err = foos.Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) { // the controller wrote its status meanwhile
			return false, nil
		}
		return err == nil, err
	})
	poll(t, ctx, "Deployment example-foo scaled to 2", func() (bool, error) {
		d, err := kubeClient.AppsV1().Deployments(ns).Get(ctx, "example-foo", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 2, err
	})

	// The Deployments came through leanstore's own list and watch, not a
	// client-go fallback, and were stripped on the way into the cache.
	inf := leanstore.Unwrap(deployments.Informer())
	if inf == nil {
		t.Fatal("the Deployment informer is not a leanstore informer")
	}
	st := inf.Status()
	if st.ListPath != leanstore.ListPathStreaming && st.ListPath != leanstore.ListPathPaged {
		t.Errorf("Deployment informer's list path = %q, want leanstore's streaming or paged list", st.ListPath)
	}
	t.Logf("Deployment informer: list path %q (%s)", st.ListPath, st.ListPathReason)
	// The server has the scaled Deployment; its watch event reaches the cache
	// a moment later.
	var cached *appsv1.Deployment
	poll(t, ctx, "the cached Deployment example-foo to have 2 replicas", func() (bool, error) {
		var err error
		cached, err = deployments.Lister().Deployments(ns).Get("example-foo")
		return err == nil && *cached.Spec.Replicas == 2, err
	})
	if n := len(cached.ManagedFields); n != 0 {
		t.Errorf("cached Deployment example-foo has %d managedFields entries, want them stripped", n)
	}
}

// installCRD creates the Foo CRD from sample-controller's manifest and waits until
// Foos are served.
func installCRD(t *testing.T, ctx context.Context, dyn dynamic.Interface) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(fooCRD, &crd.Object); err != nil {
		t.Fatalf("parse the Foo CRD: %v", err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD %s: %v", crd.GetName(), err)
	}
	foos := dyn.Resource(samplev1alpha1.SchemeGroupVersion.WithResource("foos"))
	poll(t, ctx, "Foos to be served", func() (bool, error) {
		_, err := foos.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

// poll waits up to 30 s for cond; an error from cond ends the wait at once.
func poll(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond()
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
