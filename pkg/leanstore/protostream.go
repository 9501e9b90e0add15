package leanstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// maxFrame bounds one watch frame; the API server's own limit on an object is
// far lower (etcd's request limit), so a larger length is a corrupt stream.
const maxFrame = 256 << 20

// decodeList decodes one protobuf LIST response page.
func (d *protoDecoder) decodeList(body []byte, gr schema.GroupResource) (res listResult, cont string, err error) {
	kind, msg, err := unwrap(body)
	if err != nil {
		return res, "", err
	}
	if kind == "Status" {
		return res, "", statusError(msg)
	}
	n := 0
	err = eachField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case listMetaField:
			var lm metav1.ListMeta
			if err := lm.Unmarshal(v); err != nil {
				return fmt.Errorf("decode list metadata of %s: %w", gr, err)
			}
			res.rv, cont = lm.ResourceVersion, lm.Continue
		case listItemsField:
			obj, reused, err := d.object(v, gr)
			if err != nil {
				return err
			}
			res.items = append(res.items, obj)
			if reused {
				res.reused++
			}
			if n++; n%yieldEvery == 0 {
				runtime.Gosched()
			}
		}
		return nil
	})
	return res, cont, err
}

func statusError(msg []byte) error {
	var st metav1.Status
	if err := st.Unmarshal(msg); err != nil {
		return fmt.Errorf("decode status: %w", err)
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// protoWatch reads a protobuf watch stream itself (length-prefixed WatchEvent
// frames) and decodes each object with a protoDecoder: unchanged objects come
// back as the cached ones, the others already stripped.
//
// A stream that breaks (cut, truncated, malformed) is reported through onError
// and the watch closes without an ERROR event: the reflector then watches again
// from the last resourceVersion it processed, which loses nothing, instead of
// re-listing everything as client-go does after an undecodable frame.
type protoWatch struct {
	body    io.ReadCloser
	cancel  context.CancelFunc
	d       *protoDecoder
	gr      schema.GroupResource
	onError func(error)
	out     chan watch.Event
	stop    chan struct{}
	once    sync.Once
	done    chan struct{}
}

func newProtoWatch(body io.ReadCloser, cancel context.CancelFunc, d *protoDecoder, gr schema.GroupResource, onError func(error)) *protoWatch {
	w := &protoWatch{body: body, cancel: cancel, d: d, gr: gr, onError: onError,
		out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *protoWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch: it cancels the request, which ends the blocked read, and
// waits for the reading goroutine to exit.
func (w *protoWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.cancel()
	})
	<-w.done
}

func (w *protoWatch) run() {
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
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			w.fail(fmt.Errorf("watch frame of %d bytes exceeds %d", n, maxFrame))
			return
		}
		if cap(frame) < int(n) {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			w.ended(err)
			return
		}
		ev, err := w.event(frame)
		if err != nil {
			w.fail(err)
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
func (w *protoWatch) event(frame []byte) (watch.Event, error) {
	var typ string
	var raw []byte
	err := eachField(frame, func(num protowire.Number, t protowire.Type, v []byte) error {
		switch {
		case num == watchEventType && t == protowire.BytesType:
			typ = string(v)
		case num == watchEventObject && t == protowire.BytesType:
			return eachField(v, func(n protowire.Number, t protowire.Type, rv []byte) error {
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
	kind, msg, err := unwrap(raw)
	if err != nil {
		return watch.Event{}, fmt.Errorf("%s event: %w", typ, err)
	}
	ev := watch.Event{Type: watch.EventType(typ)}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		ev.Object, _, err = w.d.object(msg, w.gr)
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
func (w *protoWatch) ended(err error) {
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

func (w *protoWatch) fail(err error) {
	w.onError(fmt.Errorf("watch stream of %s broke: %w", w.gr, err))
}
