package reflector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/internal/wire"
)

// initialEventsEndWait bounds how long a streaming list waits for the bookmark
// that ends its initial events, counted from the last event (or from the start,
// when no event came). A server that serves streaming lists sends it right after
// the last initial object; one that ignores sendInitialEvents (aggregated API
// servers, kubernetes/kubernetes#140890) never does, and a client that waits for
// it would never sync. The informer's idle time-out (WithWatchIdleTimeout) bounds
// the wait too when it is shorter.
var initialEventsEndWait = 10 * time.Second

// streamingList is one streaming list of an informer's objects: a watch with
// sendInitialEvents, whose open stream it leaves in the handoff for the
// watch that follows.
type streamingList struct {
	c           *conn
	next        *handoff
	idleTimeout time.Duration
	// sizeHint is the last list's length, to size the result once.
	sizeHint int
}

// list runs the streaming list: a watch that first sends every object as
// an ADDED event, then a bookmark marking the end of the initial events. The
// bookmark must come within initialEventsEndWait of the last event: a stream
// that goes quiet with objects sent, or that carries a change (MODIFIED or
// DELETED) or a plain bookmark before it, comes from a server that does not
// send it, which errNoInitialEventsEnd reports. A stream that closes before it
// failed once (see streamEnded).
func (sl streamingList) list(ctx context.Context, rv string, pace *Pacer) (listResult, error) {
	// A break while the initial events stream is this list's failure; after the
	// initial-events-end bookmark the stream carries on as the reflector's watch
	// (see pendingStream), and a break is reported as a watch failure.
	brk := &listBreak{}
	w, d, err := sl.c.openWatch(ctx, streamingListOptions(rv), brk.onBroken(sl.c.watchStreamBroke(ctx)))
	if err != nil {
		return listResult{}, err
	}
	res := listResult{items: make([]runtime.Object, 0, sl.sizeHint)}
	quiet := initialEventsEndWait
	if idle := sl.idleTimeout; idle > 0 && idle < quiet {
		quiet = idle
	}
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	events := 0
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return res, ctx.Err()
		case <-timer.C:
			w.Stop()
			if events == 0 {
				return res, StalledFor(quiet)
			}
			return res, fmt.Errorf("%w: nothing for %s after %d objects", errNoInitialEventsEnd, quiet, len(res.items))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return res, sl.streamEnded(brk.err(), events, len(res.items))
			}
			events++
			timer.Reset(quiet)
			var err error
			switch ev.Type {
			case watch.Added:
				err = sl.addStreamed(&res, ev.Object, d == nil, sl.c.reuses(ctx), pace)
			case eventSkipped: // another shard's, from the lean decoder (WithShard)
				sl.c.shard.SkippedListed()
			case watch.Modified, watch.Deleted:
				err = fmt.Errorf("%w: a %s event came after %d objects", errNoInitialEventsEnd, ev.Type, len(res.items))
			case watch.Bookmark:
				if err = sl.initialEventsEnd(&res, ev, d); err == nil {
					brk.listed()
					sl.next.put(ctx, w, res.rv, d != nil)
					return res, nil
				}
			case watch.Error:
				err = apierrors.FromObject(ev.Object)
			}
			if err != nil {
				w.Stop()
				return res, err
			}
		}
	}
}

// streamingListOptions are the options of a streaming list from rv, before
// the informer's scope (see conn.openWatch).
func streamingListOptions(rv string) metav1.ListOptions {
	timeout := int64((5 + rand.Float64()*5) * 60) // like client-go: 5 to 10 minutes
	send := true
	return metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    &send,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeout,
	}
}

// streamEnded is the error of a streaming list whose stream closed before
// the end of its initial events: brk, when it broke. A stream that closed
// without an error is no sign that the server ignores sendInitialEvents (such a
// server keeps the stream open as a watch, which the quiet timer or the first
// change reveals): a proxy or the network ended it, as a truncated body does
// when client-go's watch decoder reads JSON, so it is an ordinary failure.
func (sl streamingList) streamEnded(brk error, events, items int) error {
	switch {
	case brk != nil:
		return brk
	case events == 0:
		return fmt.Errorf("streaming list of %s ended before any event", sl.c.gr())
	}
	return fmt.Errorf("streaming list of %s: the stream ended after %d objects, before the initial-events-end bookmark", sl.c.gr(), items)
}

// addStreamed adds a streamed object to res; decode says it still needs
// stripping (it does not come from the lean decoder).
func (sl streamingList) addStreamed(res *listResult, obj runtime.Object, decode, reuse bool, pace *Pacer) error {
	reused := false
	if decode {
		var err error
		if obj, reused, err = sl.c.keep(obj, false, reuse); err != nil {
			return err
		}
		if obj == nil { // another shard's (WithShard)
			sl.c.shard.SkippedListed()
			return nil
		}
	}
	if err := sl.c.add(res, obj, reused); err != nil {
		return err
	}
	pace.Tick()
	return nil
}

// initialEventsEnd completes res with the bookmark that ends a streaming
// list's initial events. Any other bookmark is an error: a server that serves
// streaming lists sends none before the end of the initial events, so this
// one ignored sendInitialEvents (an API server older than 1.27).
func (sl streamingList) initialEventsEnd(res *listResult, ev watch.Event, d *wire.Decoder) error {
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Errorf("streaming list of %s: bookmark: %w", sl.c.gr(), err)
	}
	if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		return errStreamingIgnored
	}
	res.rv = m.GetResourceVersion()
	if d != nil {
		res.reused = d.Reused()
	}
	return nil
}

// refusesStreaming reports whether err is a server's refusal of streaming lists
// (an API server with the WatchList feature off rejects sendInitialEvents as an
// invalid request), as opposed to a failure of one attempt.
func refusesStreaming(err error) bool {
	if errors.Is(err, errStreamingIgnored) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code == 422
}

var (
	// errStreamingIgnored is a server answering a streaming list with a plain watch.
	errStreamingIgnored = errors.New("the server ignored sendInitialEvents: it sent a bookmark before the end of the initial events")
	// errNoInitialEventsEnd is a streaming list whose initial-events-end
	// bookmark did not come.
	errNoInitialEventsEnd = errors.New("the server sent no initial-events-end bookmark")
)
