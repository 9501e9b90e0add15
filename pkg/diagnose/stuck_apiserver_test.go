package diagnose_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/diagnose"
)

// TestStuckTerminating deletes a ConfigMap held by a finalizer nobody removes
// (the local server has no controllers): once the threshold has passed it must
// be reported with its finalizer, from an informer's store scanned
// periodically and from a one-shot metadata list; live ConfigMaps and one
// deleted without finalizers never are.
func TestStuckTerminating(t *testing.T) {
	needServer(t)
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := srv.NewNamespace(t)
	cs := srv.Clientset()
	const finalizer = "cachetune.dev/hold"
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{finalizer}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "live", Finalizers: []string{finalizer}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gone"}},
	} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Let the finalizers go at the end, so nothing is left Terminating.
	defer func() {
		for _, name := range []string{"held", "live"} {
			_, _ = cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	}()

	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	f.Start(stop)
	defer func() { close(stop); f.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("configmap informer did not sync")
	}

	const threshold = 3 * time.Second
	s, err := diagnose.NewStuckDetector(diagnose.WithThreshold(threshold), diagnose.WithResource("configmaps"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"held", "gone"} {
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deleted := time.Now()
	waitFor(t, 10*time.Second, "informer sees the deletion", func() bool {
		obj, ok, _ := inf.GetStore().GetByKey(ns + "/held")
		return ok && obj.(*corev1.ConfigMap).DeletionTimestamp != nil
	})
	if got := s.ScanStore(inf.GetStore()); len(got) != 0 {
		t.Fatalf("reported before the threshold: %+v", got)
	}

	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(runCtx, inf.GetStore(), 200*time.Millisecond) }()
	waitFor(t, 20*time.Second, "held ConfigMap reported", func() bool { return len(s.Last()) > 0 })
	took := time.Since(deleted)
	stopRun()
	<-done
	t.Logf("reported %s after the delete (threshold %s)", took.Round(time.Millisecond), threshold)
	// The server stores deletionTimestamp to the second: the age seen can be up
	// to a second more than the real one.
	if took < threshold-time.Second {
		t.Errorf("reported %s after the delete, before the threshold of %s", took, threshold)
	}

	want := []diagnose.Stuck{{Resource: "configmaps", Object: diagnose.ObjectRef{Namespace: ns, Name: "held"}, Finalizers: []string{finalizer}}}
	ignore := cmpopts.IgnoreFields(diagnose.Stuck{}, "DeletionTimestamp", "Age", "Object.UID")
	got := s.Last()
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("from the store (-want +got):\n%s", diff)
	}
	if got[0].Age < threshold || got[0].Object.UID == "" || got[0].DeletionTimestamp.After(deleted.Add(time.Second)) {
		t.Errorf("stuck %+v: age under the threshold, no UID or deletion time after the delete (%v)", got[0], deleted)
	}

	// One shot, as cachebench doctor does it: a metadata-only list of all
	// namespaces, labelled with the listed resource.
	lister, err := diagnose.NewStuckDetector(diagnose.WithThreshold(threshold))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := lister.List(ctx,
		metadata.NewForConfigOrDie(srv.Config), corev1.SchemeGroupVersion.WithResource("configmaps"), "")
	if err != nil {
		t.Fatal(err)
	}
	var mine []diagnose.Stuck
	for _, st := range listed {
		if st.Object.Namespace == ns {
			mine = append(mine, st)
		}
	}
	if diff := cmp.Diff(want, mine, ignore); diff != "" {
		t.Errorf("from a metadata list (-want +got):\n%s", diff)
	}
}
