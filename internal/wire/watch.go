package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// Watch reads a protobuf watch stream itself (length-prefixed WatchEvent
// frames) and decodes each object with a Decoder: unchanged objects come back
// as the cached ones, the others already finished by the caller.
//
// A stream that breaks (cut, truncated, malformed) is reported through onError
// and the watch closes without an ERROR event: the reflector then watches again
// from the last resourceVersion it processed, which loses nothing, instead of
// re-listing everything as client-go does after an undecodable frame.
type Watch struct {
	body    io.ReadCloser
	cancel  context.CancelFunc
	d       *Decoder
	skipped func(rv string) watch.Event
	onError func(error)
	out     chan watch.Event
	stop    chan struct{}
	once    sync.Once
	done    chan struct{}
}

// NewWatch starts reading body. cancel ends the request behind body. An object
// the caller skips comes out as the event skipped returns for its
// resourceVersion; a broken stream is reported to onError.
func NewWatch(body io.ReadCloser, cancel context.CancelFunc, d *Decoder, skipped func(rv string) watch.Event, onError func(error)) *Watch {
	w := &Watch{body: body, cancel: cancel, d: d, skipped: skipped, onError: onError,
		out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// ResultChan returns the decoded events.
func (w *Watch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch: it cancels the request, which ends the blocked read, and
// waits for the reading goroutine to exit.
func (w *Watch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.cancel()
	})
	<-w.done
}

func (w *Watch) run() {
	defer close(w.done)
	defer close(w.out)
	defer w.body.Close()
	defer w.cancel()
	r := bufio.NewReaderSize(w.body, 32<<10)
	var hdr [4]byte
	var frame []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			w.ended(err)
			return
		}
		if looksLikeJSON(hdr[0]) {
			w.fail(ErrAnsweredJSON)
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			w.fail(fmt.Errorf("watch frame of %d bytes exceeds %d", n, maxFrame))
			return
		}
		if cap(frame) < int(n) {
			frame = make([]byte, growTo(cap(frame), int(n)))
		}
		frame = frame[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			w.ended(err)
			return
		}
		ev, err := w.event(frame)
		if err != nil {
			w.fail(&failure.Error{Layer: failure.LayerDecode, Reason: failure.Decode, Resource: w.d.gr.String(), Err: err})
			return
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

// event decodes one WatchEvent frame.
func (w *Watch) event(frame []byte) (watch.Event, error) {
	var typ string
	var raw []byte
	err := EachField(frame, func(num protowire.Number, t protowire.Type, v []byte) error {
		switch {
		case num == watchEventType && t == protowire.BytesType:
			typ = eventType(v)
		case num == watchEventObject && t == protowire.BytesType:
			return EachField(v, func(n protowire.Number, t protowire.Type, rv []byte) error {
				if n == rawExtensionRaw && t == protowire.BytesType {
					raw = rv
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return watch.Event{}, err
	}
	kind, msg, err := Unwrap(raw)
	if err != nil {
		return watch.Event{}, fmt.Errorf("%s event: %w", typ, err)
	}
	ev := watch.Event{Type: watch.EventType(typ)}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		ev.Object, _, err = w.d.Object(msg)
		if err == nil && ev.Object == nil { // skipped by the caller (another shard's)
			ev = w.skipped(string(w.d.skippedRV))
		}
	case watch.Bookmark:
		obj := w.d.newObject()
		err = obj.(unmarshaler).Unmarshal(msg)
		ev.Object = obj
	case watch.Error:
		if kind != "Status" {
			return ev, fmt.Errorf("ERROR event carries a %s, not a Status", kind)
		}
		st := &metav1.Status{}
		err = st.Unmarshal(msg)
		ev.Object = st
	default:
		return ev, fmt.Errorf("unknown watch event type %q", typ)
	}
	return ev, err
}

// ended handles the end of the stream: a clean end or a cancelled request closes
// the watch quietly; a broken stream is reported first.
func (w *Watch) ended(err error) {
	select {
	case <-w.stop:
		return
	default:
	}
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return
	}
	w.fail(err)
}

func (w *Watch) fail(err error) {
	w.onError(fmt.Errorf("watch stream of %s broke: %w", w.d.gr, err))
}

// eventType returns the event type named by b without allocating for the known
// types, which is every event of a healthy stream.
func eventType(b []byte) string {
	for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if string(b) == string(t) {
			return string(t)
		}
	}
	return string(b)
}
