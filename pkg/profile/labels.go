package profile

import (
	"context"
	"runtime/pprof"

	"github.com/grafana/pyroscope-go"
)

// The pprof label keys that Do and Labels set. Pyroscope shows them as tags
// of the samples they cover; `go tool pprof -tagfocus informer=pods` and
// `-tagshow` filter a CPU or goroutine profile by them.
const (
	LabelInformer = "informer"
	LabelResource = "resource"
)

// Labels returns the pprof label set for work done on behalf of one informer:
// informer is the name a process knows it by (e.g. "pods" or
// "widgets-cluster-scoped"), resource the API resource it caches (e.g.
// "pods", "widgets.example.com").
func Labels(informer, resource string) pprof.LabelSet {
	return pprof.Labels(LabelInformer, informer, LabelResource, resource)
}

// Do runs f with the informer and resource labels added to ctx's, on the
// calling goroutine. Goroutines started inside f inherit the labels, which is
// what makes them useful for informers: run the informer from within Do and
// its reflector, decoding and handlers are labelled too.
//
//	profile.Do(ctx, "pods", "pods", func(ctx context.Context) {
//		podInformer.Run(ctx.Done())
//	})
//
// CPU and goroutine profiles then split by informer, locally and in
// Pyroscope (it is pyroscope-go's TagWrapper, which is pprof.Do). Heap
// profiles and fgprof's wall-clock profile carry no labels: the runtime does
// not record them there. A goroutine keeps the labels of the goroutine that
// started it, so a connection goroutine of a shared HTTP transport carries
// the labels of whichever informer dialled first.
func Do(ctx context.Context, informer, resource string, f func(context.Context)) {
	pyroscope.TagWrapper(ctx, Labels(informer, resource), f)
}
