// Package dataset generates realistic Kubernetes objects and seeds them into a
// cluster, for cachetune's tests and benchmarks. It is part of the test kit
// (pkg/testkit), beside apiserver and faults.
//
// The guide that uses it: docs/memory.md, whose datasets it seeds.
//
// Pods look like those of a Deployment in production: an init container, the app's
// container and a mesh sidecar, with env, probes, resources and volume mounts,
// labels, owner references and kubectl's last-applied annotation. Each object is created with server-side
// apply by one field manager (ApplyManager) and then updated by a second
// (StatusManager), through the status subresource where the kind has one, so that
// managedFields are real and name two managers. ConfigMaps, large Secrets and a
// custom resource (Widget) complete the set. Spec.PodShape says how much Pods
// have in common: those of one workload share their template (the default),
// or every Pod has its own env values and image (PodsUnique), or every Pod
// differs from every other in everything a cache could share (PodsDistinct).
//
//	spec := dataset.Standard("bench")          // 10,000 Pods
//	spec.Progress = dataset.ProgressPrinter(os.Stderr)
//	if err := dataset.Seed(ctx, cfg, spec); err != nil { ... }
//	sizes, err := dataset.Measure(ctx, cfg, dataset.PodsGVR, "bench", "")
//	...
//	err = dataset.Clean(ctx, cfg, "bench", spec.Name, nil)
package dataset
