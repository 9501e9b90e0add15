package diagnose_test

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/cachetune/cachetune/pkg/diagnose"
)

// A controller writes the time into an object's status on every reconcile, and
// its own write triggers the next reconcile. In a real program the detector's
// Handler is registered on the informer (informer.AddEventHandler(d.Handler()))
// and the informer calls Observe; here the updates are fed by hand, one a
// second, on a fake clock.
func ExampleChurnDetector() {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d, err := diagnose.NewChurnDetector(
		diagnose.WithResource("pods"),
		diagnose.WithWindow(time.Minute),
		diagnose.WithLoopThreshold(20),
		diagnose.WithClock(clk),
	)
	if err != nil {
		panic(err)
	}
	prev := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-0", ResourceVersion: "1", Generation: 1}}
	for i := 2; i <= 40; i++ {
		clk.Step(time.Second)
		next := prev.DeepCopy()
		next.ResourceVersion = strconv.Itoa(i)
		next.Status.Message = "reconciled at " + clk.Now().Format(time.RFC3339)
		next.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "cart-controller", Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: "status", Time: &metav1.Time{Time: clk.Now()}}}
		d.Observe(prev, next)
		prev = next
	}
	for _, f := range d.Findings() {
		fmt.Printf("%s %s %s: %d updates in %s, %d distinct, by %v, going on since %s\n",
			f.Kind, f.Resource, f.Object, f.Updates, f.Window, f.Distinct, f.Managers, f.StreakSince.Format(time.TimeOnly))
	}
	// Output:
	// loop pods shop/cart-0: 30 updates in 1m0s, 30 distinct, by [cart-controller], going on since 00:00:01
}

// Objects stuck Terminating, from whatever an informer's store holds.
func ExampleStuckDetector() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s, err := diagnose.NewStuckDetector(diagnose.WithThreshold(10*time.Minute), diagnose.WithClock(testingclock.NewFakeClock(now)))
	if err != nil {
		panic(err)
	}
	deletedAt := metav1.NewTime(now.Add(-time.Hour))
	objs := []any{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart-config",
			DeletionTimestamp: &deletedAt, Finalizers: []string{"shop.example.com/backup"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "live"}},
	}
	// With an informer: s.ScanStore(informer.GetStore()), or go s.Run(ctx, store, time.Minute).
	for _, st := range s.Scan(objs) {
		fmt.Printf("%s Terminating for %s, waiting for %v\n", st.Object, st.Age, st.Finalizers)
	}
	// Output:
	// shop/cart-config Terminating for 1h0m0s, waiting for [shop.example.com/backup]
}
