package doctor

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
)

// streamingTimeout bounds the streaming-list check: on the smallest resource
// the initial events end in well under a second.
const streamingTimeout = 10 * time.Second

// initialEventsEnd is the annotation of the bookmark that ends the initial
// events of a streaming list.
const initialEventsEnd = "k8s.io/initial-events-end"

// streamingLists asks for a streaming list of t, as client-go's reflector
// does under WatchListClient (a metadata-only watch, to keep it small): a
// watch with sendInitialEvents=true and resourceVersionMatch=NotOlderThan.
// A server that serves them sends the objects and then a bookmark annotated
// k8s.io/initial-events-end; one that does not refuses the watch with a 4xx.
func streamingLists(ctx context.Context, mc metadata.Interface, t target, namespace string) Streaming {
	s := Streaming{Supported: Unknown, Resource: t.name()}
	if !t.namespaced {
		namespace = ""
	}
	ctx, cancel := context.WithTimeout(ctx, streamingTimeout)
	defer cancel()
	start := time.Now()
	w, err := mc.Resource(t.gvr).Namespace(namespace).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       ptr(int64(streamingTimeout / time.Second)),
	})
	if err != nil {
		return refused(s, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Bookmark:
			m, ok := ev.Object.(metav1.Object)
			if ok && m.GetAnnotations()[initialEventsEnd] == "true" {
				s.Supported, s.Seconds = Supported, time.Since(start).Seconds()
				s.Detail = "the initial events ended with a k8s.io/initial-events-end bookmark"
				return s
			}
		case watch.Error:
			return refused(s, apierrors.FromObject(ev.Object))
		}
	}
	s.Detail = fmt.Sprintf("no k8s.io/initial-events-end bookmark within %s", streamingTimeout)
	return s
}

// refused reads a refused watch: a 4xx means the server does not serve
// streaming lists (an old server, or the WatchList feature off); anything else
// leaves the question open.
func refused(s Streaming, err error) Streaming {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := status.Status().Code; code >= 400 && code < 500 {
			s.Supported = Unsupported
		}
	}
	s.Detail = err.Error()
	return s
}

func ptr[T any](v T) *T { return &v }
