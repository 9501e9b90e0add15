package reflector

import (
	"context"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Source makes the list and watch requests of one resource: leanstore's typed
// REST, dynamic and metadata sources.
type Source interface {
	// List returns one page of a LIST.
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// Resolve is called before each list; it may look up the resource's name
	// and scope with discovery the first time.
	Resolve(ctx context.Context) error
}

// RawSource is a Source that can also hand out raw protobuf responses, for
// the lean decoder (internal/wire, through wire_caller.go).
type RawSource interface {
	Source
	RawList(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error)
	RawWatch(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error)
	// NewObject returns an empty object of the resource's type, to decode into.
	NewObject() runtime.Object
}
