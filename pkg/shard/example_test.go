package shard_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/pkg/shard"
)

// A key that reaches a replica from outside its own informers (a timer, a
// webhook, an owner found by its reference) may be another replica's: the
// ring says whose.
func ExampleRing_Owner() {
	m, err := shard.Static(1, 3) // this replica is shard 1 of 3
	if err != nil {
		fmt.Println(err)
		return
	}
	ring, _ := m.Ring()
	for _, name := range []string{"web-0", "web-1", "web-2", "web-3", "web-4"} {
		owner := ring.Owner("default", name, shard.ByObject)
		fmt.Printf("default/%s: %s, mine: %v\n", name, owner, owner == m.Self())
	}
	// Output:
	// default/web-0: shard-0, mine: false
	// default/web-1: shard-0, mine: false
	// default/web-2: shard-2, mine: false
	// default/web-3: shard-1, mine: true
	// default/web-4: shard-2, mine: false
}

// Replicas that hold Leases split the keys of a work queue among themselves,
// and each re-reads its share when one joins, leaves or dies.
func ExampleNewLeaseMembership() {
	run := func(ctx context.Context, clientset kubernetes.Interface, keys []string) error {
		m, err := shard.NewLeaseMembership(clientset, shard.LeaseConfig{
			Namespace: "shop-system", // where the Leases live
			Group:     "shop-controller",
			// Identity defaults to the host name: the Pod's name.
			LeaseDuration: 15 * time.Second,
		})
		if err != nil {
			return err
		}
		m.Start(ctx) // releases the Lease when ctx ends
		for {
			v, err := m.Wait(ctx)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if v.Owns("shop", k, shard.ByObject) {
					log.Printf("%s works on shop/%s (ring generation %d)", m.Self(), k, v.Generation())
				}
			}
			select {
			case <-v.Changed():
			case <-ctx.Done():
				return nil
			}
		}
	}
	_ = run
}

// A program that learns its replicas another way sets the members itself.
func ExampleNewMembership() {
	m, err := shard.NewMembership("worker-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Set("worker-a", "worker-b", "worker-c"); err != nil {
		fmt.Println(err)
		return
	}
	v := m.Current()
	fmt.Println(v.Members(), v.Member(), v.Owns("default", "web-3", shard.ByObject))
	// Output:
	// [worker-a worker-b worker-c] true false
}
