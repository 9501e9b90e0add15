package dataset_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// NewPod builds the Pods of a dataset without a server, as benchmarks of a
// cache do: Pod i of the standard dataset, as the server holds it once seeded.
func ExampleNewPod() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := dataset.NewPod(dataset.Standard("bench"), 3, now)
	fmt.Println(pod.Namespace + "/" + pod.Name)
	fmt.Println("owner:", pod.OwnerReferences[0].Kind, pod.OwnerReferences[0].Name)
	fmt.Println("init containers:", len(pod.Spec.InitContainers), "containers:", len(pod.Spec.Containers))
	fmt.Println("image:", pod.Spec.Containers[0].Image)
	fmt.Println("phase:", pod.Status.Phase)
	_, lastApplied := pod.Annotations[dataset.LastAppliedAnnotation]
	fmt.Println("last-applied annotation:", lastApplied)
	// Output:
	// bench/search-5d8f7c9b7-00003
	// owner: ReplicaSet search-5d8f7c9b7
	// init containers: 1 containers: 2
	// image: registry.example.com/shop/search:v1.7.3
	// phase: Running
	// last-applied annotation: true
}

// Mixed scales a typical controller's cache with the number of Pods.
func ExampleMixed() {
	spec := dataset.Mixed("bench", 30000)
	fmt.Println("pods:", spec.Pods, "configmaps:", spec.ConfigMaps, "secrets:", spec.Secrets,
		"nodes:", spec.Nodes, "widgets:", spec.Widgets)
	// Output:
	// pods: 30000 configmaps: 6000 secrets: 3000 nodes: 300 widgets: 1500
}

// Seed writes a dataset into a cluster, Measure reports what its objects weigh
// and Clean removes it. cfg is any admin rest.Config, such as the Config of a
// server the apiserver package started. (Not run: it needs a server.)
func ExampleSeed() {
	var cfg *rest.Config // for example srv.Config
	ctx := context.Background()
	spec := dataset.Standard("bench")
	spec.Pods = 1000 // of the standard 10,000
	spec.Progress = dataset.ProgressPrinter(os.Stderr)
	if err := dataset.Seed(ctx, cfg, spec); err != nil {
		fmt.Println("seed:", err)
		return
	}
	sizes, err := dataset.Measure(ctx, cfg, dataset.PodsGVR, spec.Namespace, dataset.Selector(spec, dataset.PodsGVR))
	if err != nil {
		fmt.Println("measure:", err)
		return
	}
	fmt.Printf("%d Pods of %.0f bytes as JSON, %.0f of them managedFields\n",
		sizes.Count, sizes.JSON, sizes.ManagedFields)
	if err := dataset.Clean(ctx, cfg, spec.Namespace, spec.Name, nil); err != nil {
		fmt.Println("clean:", err)
	}
}
