package doctor

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/cachetune/cachetune/pkg/leanstore"
)

// projectionModes are the cache modes projected, in report order. The strip
// steps are cumulative, and each mode names the `cachebench run` mode that
// measures it.
var (
	typedModes = []struct{ mode, title string }{
		{"client-go/typed", "client-go typed, no stripping"},
		{"client-go/typed-strip-mf", "typed, strip managedFields"},
		{"client-go/typed-strip-mf-la", "typed, strip managedFields and last-applied"},
		{"leanstore/typed-lean", "leanstore typed: strip both, share equal parts"},
	}
	dynamicModes = []struct{ mode, title string }{
		{"client-go/dynamic", "client-go dynamic, no stripping"},
		{"client-go/dynamic-strip-mf", "dynamic, strip managedFields"},
		{"client-go/dynamic-strip-mf-la", "dynamic, strip managedFields and last-applied"},
		{"leanstore/dynamic-lean", "leanstore dynamic: strip both, share equal parts"},
	}
	metadataModes = []struct{ mode, title string }{
		{"client-go/metadata", "metadata-only"},
		{"client-go/metadata-strip-mf", "metadata-only, strip managedFields"},
	}
)

// Indexes of the projections in a Resource, in report order.
const (
	projPlain = iota
	projStripManagedFields
	projStripLastApplied
	projLean
	projMetadata
	projMetadataStripped
)

// The strip steps applied one after the other to the sample: each includes
// the one before, so the sample is stripped in place, step by step.
var typedSteps = []cache.TransformFunc{
	nil,
	leanstore.Transform(),
	leanstore.Transform(leanstore.WithStripLastApplied()),
	leanstore.Transform(leanstore.WithStripLastApplied(), leanstore.WithSharing(true)),
}

var metadataSteps = []cache.TransformFunc{nil, leanstore.Transform()}

// project estimates the cache heap of count objects like sample in each mode:
// the sample is transformed as each mode's informer would transform what it
// decodes, and sized with leanstore.EstimateBytesPerObject, the census's
// sizing (the store's key and entry included), so that projections and a
// census of the same cache agree. The sample is
// consumed: its objects are stripped in place.
func project(sample []runtime.Object, builtIn bool, count int, meanKey float64) ([]Projection, error) {
	if len(sample) == 0 || count == 0 {
		return nil, nil
	}
	perObject := func(objs []interface{}) float64 {
		return leanstore.EstimateBytesPerObject(objs, count, meanKey)
	}
	objs := make([]interface{}, len(sample))
	for i, o := range sample {
		objs[i] = o
	}

	// Metadata-only first: the converted objects share their metadata's
	// slices and maps with the full objects, which the steps below change.
	partial := make([]interface{}, len(sample))
	for i, o := range sample {
		p, err := toPartial(o)
		if err != nil {
			return nil, err
		}
		partial[i] = p
	}
	metadata := make([]float64, len(metadataSteps))
	for i, step := range metadataSteps {
		if err := apply(step, partial); err != nil {
			return nil, err
		}
		metadata[i] = perObject(partial)
	}

	modes := typedModes
	if !builtIn {
		modes = dynamicModes
	}
	var out []Projection
	for i, step := range typedSteps {
		if err := apply(step, objs); err != nil {
			return nil, err
		}
		out = append(out, Projection{Mode: modes[i].mode, Title: modes[i].title, PerObject: perObject(objs)})
	}
	for i, m := range metadataModes {
		out = append(out, Projection{Mode: m.mode, Title: m.title, PerObject: metadata[i]})
	}
	base := out[0].PerObject
	for i := range out {
		out[i].Total = int64(out[i].PerObject * float64(count))
		if base > 0 {
			out[i].Saving = 1 - out[i].PerObject/base
		}
	}
	return out, nil
}

func apply(step cache.TransformFunc, objs []interface{}) error {
	if step == nil {
		return nil
	}
	for i, o := range objs {
		t, err := step(o)
		if err != nil {
			return err
		}
		objs[i] = t
	}
	return nil
}

// toPartial converts an object to what a metadata-only informer caches: its
// ObjectMeta in a PartialObjectMetadata. For typed objects the metadata is
// copied as it is (sharing its slices, maps and strings, as decoding it alone
// would allocate them); for unstructured ones it is converted from the map.
func toPartial(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		m, _ := o.Object["metadata"].(map[string]interface{})
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &p.ObjectMeta); err != nil {
			return nil, fmt.Errorf("convert the metadata of %s to ObjectMeta: %w", o.GetName(), err)
		}
	case metav1.ObjectMetaAccessor:
		m, ok := o.GetObjectMeta().(*metav1.ObjectMeta)
		if !ok {
			return nil, fmt.Errorf("%T has no ObjectMeta", obj)
		}
		p.ObjectMeta = *m
	default:
		return nil, fmt.Errorf("%T has no ObjectMeta", obj)
	}
	return p, nil
}
