package leanstore_test

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/shard"
)

// Replicas of a controller split its caches: each holds the objects the ring of
// live Leases gives it, and takes or drops objects when a replica joins or dies.
func ExampleWithShard() {
	run := func(ctx context.Context, clientset kubernetes.Interface) error {
		m, err := shard.NewLeaseMembership(clientset, shard.LeaseConfig{
			Namespace: "shop-system", // where the Leases live
			Group:     "shop-controller",
			// Identity defaults to the host name: the Pod's name.
		})
		if err != nil {
			return err
		}
		factory := leanstore.NewSharedInformerFactory(clientset, 0,
			leanstore.WithShard(m, shard.ByNamespace)) // a namespace's objects stay together
		pods := factory.Core().V1().Pods().Lister() // this replica's Pods only
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		_ = pods
		return nil
	}
	_ = run
}
