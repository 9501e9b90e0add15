package leanstore_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// Replicas of a controller split its caches: each holds the objects the ring of
// live Leases gives it, and takes or drops objects when a replica joins or dies.
func ExampleWithShard() {
	run := func(ctx context.Context, clientset kubernetes.Interface) error {
		m, err := leanstore.NewLeaseMembership(clientset, leanstore.LeaseConfig{
			Namespace: "shop-system", // where the Leases live
			Group:     "shop-controller",
			// Identity defaults to the host name: the Pod's name.
		})
		if err != nil {
			return err
		}
		factory := leanstore.NewSharedInformerFactory(clientset, 0,
			leanstore.WithShard(m, leanstore.ShardByNamespace)) // a namespace's objects stay together
		pods := factory.Core().V1().Pods().Lister() // this replica's Pods only
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		_ = pods
		return nil
	}
	_ = run
}

// A key that reaches a work queue from outside the sharded informer (a timer,
// a webhook, an owner found by its reference) may be another replica's: the
// ring says whose.
func ExampleRing_Owner() {
	m, err := leanstore.StaticShards(1, 3) // this replica is shard 1 of 3
	if err != nil {
		fmt.Println(err)
		return
	}
	ring, _ := m.Ring()
	for _, name := range []string{"web-0", "web-1", "web-2", "web-3", "web-4"} {
		owner := ring.Owner("default", name, leanstore.ShardByObject)
		fmt.Printf("default/%s: %s, mine: %v\n", name, owner, owner == m.Self())
	}
	// Output:
	// default/web-0: shard-0, mine: false
	// default/web-1: shard-0, mine: false
	// default/web-2: shard-2, mine: false
	// default/web-3: shard-1, mine: true
	// default/web-4: shard-2, mine: false
}
