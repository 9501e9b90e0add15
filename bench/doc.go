// Package bench holds cachetune's Go benchmarks and its committed reference
// results. The benchmarks measure, per object, what an informer cache pays in
// client-go for realistic Pods (testdata/pods.json: Pods from the standard
// dataset, read back from a real kube-apiserver): decoding a list as protobuf
// and as JSON, the transforms that strip fields, and the live heap of a store
// filled in each mode.
//
// The guide that uses it: docs/memory.md, which quotes its results.
//
//	go test -run '^$' -bench . -count 6 ./bench/ | tee new.txt
//	benchstat bench/results/go-bench.txt new.txt
//
// results/ holds the reference output of these benchmarks and of
// `cachebench run`, with the machine they came from.
package bench
