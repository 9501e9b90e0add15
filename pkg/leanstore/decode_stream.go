package leanstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cachetune/cachetune/pkg/failure"
)

// maxFrame bounds one watch frame; the API server's own limit on an object is
// far lower (etcd's request limit), so a larger length is a corrupt stream.
const maxFrame = 256 << 20

// decodeListStream decodes one protobuf LIST response page as it is read: the
// envelope and the list message are walked field by field, and each item is read
// into a reused buffer and decoded on its own. The page is never held whole, so a
// list needs no more memory than one object beyond what it keeps.
//
// A page is accepted only when it is complete: the envelope carries the list
// message, every length it and the list declare is there in full, and the list
// has its metadata. A body cut anywhere, even at an item boundary, is a Decode
// failure, never a shorter list: inside a re-list, a shorter list would delete
// every object past the cut.
func (d *protoDecoder) decodeListStream(body io.Reader, gr schema.GroupResource, pace *pacer) (res listResult, cont string, err error) {
	r := bufio.NewReaderSize(body, 32<<10)
	if err := d.checkMagic(r, gr); err != nil {
		return res, "", err
	}
	var apiVersion, kind string
	listed := false
	for {
		num, typ, n, err := readTag(r)
		if err == io.EOF {
			if !listed {
				return res, "", decodeError(gr, fmt.Errorf("list of %s: the body ended before the list message", gr))
			}
			return res, cont, nil
		}
		if err != nil {
			return res, "", decodeError(gr, fmt.Errorf("read list of %s: %w", gr, err))
		}
		if typ != protowire.BytesType {
			return res, "", decodeError(gr, fmt.Errorf("list of %s: unexpected field %d of type %d in the envelope", gr, num, typ))
		}
		switch {
		case num == unknownTypeMeta:
			b, err := d.readN(r, n)
			if err != nil {
				return res, "", decodeError(gr, fmt.Errorf("read list of %s: %w", gr, err))
			}
			err = eachField(b, func(fn protowire.Number, ft protowire.Type, v []byte) error {
				switch {
				case fn == typeMetaKind && ft == protowire.BytesType:
					kind = string(v)
				case fn == typeMetaAPIVersion && ft == protowire.BytesType:
					apiVersion = string(v)
				}
				return nil
			})
			if err == nil && kind != "Status" {
				err = d.checkListType(apiVersion, kind)
			}
			if err != nil {
				return res, "", decodeError(gr, fmt.Errorf("list of %s: its type: %w", gr, err))
			}
		case num == unknownRaw && kind == "Status":
			b, err := d.readN(r, n)
			if err != nil {
				return res, "", decodeError(gr, fmt.Errorf("read status of %s: %w", gr, err))
			}
			return res, "", statusError(b)
		case num == unknownRaw:
			cont, err = d.listMessage(&io.LimitedReader{R: r, N: int64(n)}, &res, gr, pace)
			if err != nil {
				return res, "", err
			}
			listed = true
		default:
			if _, err := r.Discard(int(n)); err != nil {
				return res, "", decodeError(gr, fmt.Errorf("read list of %s: %w", gr, unexpectedEOF(err)))
			}
		}
	}
}

// checkMagic reads the protobuf envelope's magic number. A body that starts
// like JSON is errAnsweredJSON, so that the informer can switch to JSON.
func (d *protoDecoder) checkMagic(r *bufio.Reader, gr schema.GroupResource) error {
	if first, err := r.Peek(1); err == nil && looksLikeJSON(first[0]) {
		return fmt.Errorf("list of %s: %w", gr, errAnsweredJSON)
	}
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return decodeError(gr, fmt.Errorf("read list of %s: %w", gr, unexpectedEOF(err)))
	}
	if !bytes.Equal(magic[:], protoMagic) {
		return decodeError(gr, fmt.Errorf("list of %s: %w (it starts with %q)", gr, errNotProtobuf, magic[:]))
	}
	return nil
}

// looksLikeJSON reports whether a body whose first byte is b is JSON.
func looksLikeJSON(b byte) bool {
	switch b {
	case '{', '[', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// decodeError marks err as a Decode failure of resource gr.
func decodeError(gr schema.GroupResource, err error) error {
	return &failure.Error{Layer: failure.LayerDecode, Reason: failure.Decode, Resource: gr.String(), Err: err}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// listMessage reads the fields of a list message (metadata, items). Its list
// metadata must be there: the API server always writes it.
func (d *protoDecoder) listMessage(lr *io.LimitedReader, res *listResult, gr schema.GroupResource, pace *pacer) (cont string, err error) {
	r := bufio.NewReaderSize(lr, 512)
	sawMeta := false
	// A repeated field merges into the one before it, as in every protobuf
	// decoder.
	var lm metav1.ListMeta
	for {
		num, typ, n, err := readTag(r)
		if err == io.EOF {
			if lr.N != 0 {
				return "", decodeError(gr, fmt.Errorf("list of %s: truncated: the body ended %d bytes before the end of the list message", gr, lr.N))
			}
			if !sawMeta {
				return "", decodeError(gr, fmt.Errorf("list of %s has no list metadata", gr))
			}
			return cont, nil
		}
		if err != nil {
			return "", decodeError(gr, fmt.Errorf("read list of %s: %w", gr, err))
		}
		if typ != protowire.BytesType {
			return "", decodeError(gr, fmt.Errorf("list of %s: unexpected field %d of type %d", gr, num, typ))
		}
		b, err := d.readN(r, n)
		if err != nil {
			return "", decodeError(gr, fmt.Errorf("read list of %s: %w", gr, err))
		}
		switch num {
		case listMetaField:
			if err := lm.Unmarshal(b); err != nil {
				return "", decodeError(gr, fmt.Errorf("decode list metadata of %s: %w", gr, err))
			}
			res.rv, cont = lm.ResourceVersion, lm.Continue
			sawMeta = true
		case listItemsField:
			obj, reused, err := d.object(b, gr)
			if err != nil {
				return "", decodeError(gr, err)
			}
			if obj == nil { // another shard's (WithShard)
				d.shard.skippedListed.Add(1)
				continue
			}
			res.items = append(res.items, obj)
			if reused {
				res.reused++
			}
			pace.tick()
		}
	}
}

// readTag reads a field tag and, for length-delimited fields, the length.
func readTag(r *bufio.Reader) (protowire.Number, protowire.Type, uint64, error) {
	tag, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, 0, 0, err
	}
	num, typ := protowire.DecodeTag(tag)
	if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
		// Field number 0 (or one past 2^29-1) is no protobuf: apimachinery's
		// decoder rejects it ("illegal tag 0"), and so must this one.
		return 0, 0, 0, fmt.Errorf("invalid protobuf field number %d", num)
	}
	if typ != protowire.BytesType {
		return num, typ, 0, nil
	}
	n, err := binary.ReadUvarint(r)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && n > maxFrame {
		err = fmt.Errorf("field %d of %d bytes exceeds %d", num, n, maxFrame)
	}
	return num, typ, n, err
}

// readN reads n bytes into the decoder's item buffer, which the next call reuses.
func (d *protoDecoder) readN(r io.Reader, n uint64) ([]byte, error) {
	if uint64(cap(d.itemBuf)) < n {
		d.itemBuf = make([]byte, growTo(cap(d.itemBuf), int(n)))
	}
	d.itemBuf = d.itemBuf[:n]
	if _, err := io.ReadFull(r, d.itemBuf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return d.itemBuf, nil
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
		if looksLikeJSON(hdr[0]) {
			w.fail(errAnsweredJSON)
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
			w.fail(&failure.Error{Layer: failure.LayerDecode, Reason: failure.Decode, Resource: w.gr.String(), Err: err})
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
			typ = eventType(v)
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
		if err == nil && ev.Object == nil { // another shard's (WithShard): see skippedEvent
			ev = skippedEvent(string(w.d.skippedRV))
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

// growTo is the capacity for a buffer of capacity c that must hold n bytes: with
// headroom, so that objects of slowly growing sizes do not reallocate it each time.
func growTo(c, n int) int {
	return max(n+n/4, 2*c)
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
