package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/pkg/failure"
)

// maxFrame bounds one watch frame; the API server's own limit on an object is
// far lower (etcd's request limit), so a larger length is a corrupt stream.
const maxFrame = 256 << 20

// ErrAnsweredJSON is a server answering JSON to a request for protobuf.
var ErrAnsweredJSON = errors.New("the server answered JSON to a request for protobuf")

// ListItem receives each item of a list page as it is decoded: obj is nil for
// an item the caller skips (Caller.Skip), and reused says obj is the cached one.
// The caller keeps the items and paces its own work (the heap) from here.
type ListItem func(obj runtime.Object, reused bool)

// List decodes one protobuf LIST response page as it is read: the envelope and
// the list message are walked field by field, and each item is read into a
// reused buffer, decoded on its own and handed to item. The page is never held
// whole, so a list needs no more memory than one object beyond what it keeps.
// It returns the list's resourceVersion and continue token.
//
// A page is accepted only when it is complete: the envelope carries the list
// message, every length it and the list declare is there in full, and the list
// has its metadata. A body cut anywhere, even at an item boundary, is a Decode
// failure, never a shorter list: inside a re-list, a shorter list would delete
// every object past the cut. The items handed before such a failure are to be
// dropped.
func (d *Decoder) List(body io.Reader, item ListItem) (rv, cont string, err error) {
	gr := d.gr
	r := bufio.NewReaderSize(body, 32<<10)
	if err := d.checkMagic(r); err != nil {
		return "", "", err
	}
	var apiVersion, kind string
	listed := false
	for {
		num, typ, n, err := readTag(r)
		if err == io.EOF {
			if !listed {
				return "", "", d.decodeError(fmt.Errorf("list of %s: the body ended before the list message", gr))
			}
			return rv, cont, nil
		}
		if err != nil {
			return "", "", d.decodeError(fmt.Errorf("read list of %s: %w", gr, err))
		}
		if typ != protowire.BytesType {
			return "", "", d.decodeError(fmt.Errorf("list of %s: unexpected field %d of type %d in the envelope", gr, num, typ))
		}
		switch {
		case num == unknownTypeMeta:
			b, err := d.readN(r, n)
			if err != nil {
				return "", "", d.decodeError(fmt.Errorf("read list of %s: %w", gr, err))
			}
			err = EachField(b, func(fn protowire.Number, ft protowire.Type, v []byte) error {
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
				return "", "", d.decodeError(fmt.Errorf("list of %s: its type: %w", gr, err))
			}
		case num == unknownRaw && kind == "Status":
			b, err := d.readN(r, n)
			if err != nil {
				return "", "", d.decodeError(fmt.Errorf("read status of %s: %w", gr, err))
			}
			return "", "", statusError(b)
		case num == unknownRaw:
			rv, cont, err = d.listMessage(&io.LimitedReader{R: r, N: int64(n)}, item)
			if err != nil {
				return "", "", err
			}
			listed = true
		default:
			if _, err := r.Discard(int(n)); err != nil {
				return "", "", d.decodeError(fmt.Errorf("read list of %s: %w", gr, unexpectedEOF(err)))
			}
		}
	}
}

// checkMagic reads the protobuf envelope's magic number. A body that starts
// like JSON is ErrAnsweredJSON, so that the informer can switch to JSON.
func (d *Decoder) checkMagic(r *bufio.Reader) error {
	if first, err := r.Peek(1); err == nil && looksLikeJSON(first[0]) {
		return fmt.Errorf("list of %s: %w", d.gr, ErrAnsweredJSON)
	}
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return d.decodeError(fmt.Errorf("read list of %s: %w", d.gr, unexpectedEOF(err)))
	}
	if !bytes.Equal(magic[:], protoMagic) {
		return d.decodeError(fmt.Errorf("list of %s: %w (it starts with %q)", d.gr, errNotProtobuf, magic[:]))
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

// decodeError marks err as a Decode failure of the decoder's resource.
func (d *Decoder) decodeError(err error) error {
	return &failure.Error{Layer: failure.LayerDecode, Reason: failure.Decode, Resource: d.gr.String(), Err: err}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// listMessage reads the fields of a list message (metadata, items). Its list
// metadata must be there: the API server always writes it.
func (d *Decoder) listMessage(lr *io.LimitedReader, item ListItem) (rv, cont string, err error) {
	gr := d.gr
	r := bufio.NewReaderSize(lr, 512)
	sawMeta := false
	// A repeated field merges into the one before it, as in every protobuf
	// decoder.
	var lm metav1.ListMeta
	for {
		num, typ, n, err := readTag(r)
		if err == io.EOF {
			if lr.N != 0 {
				return "", "", d.decodeError(fmt.Errorf("list of %s: truncated: the body ended %d bytes before the end of the list message", gr, lr.N))
			}
			if !sawMeta {
				return "", "", d.decodeError(fmt.Errorf("list of %s has no list metadata", gr))
			}
			return rv, cont, nil
		}
		if err != nil {
			return "", "", d.decodeError(fmt.Errorf("read list of %s: %w", gr, err))
		}
		if typ != protowire.BytesType {
			return "", "", d.decodeError(fmt.Errorf("list of %s: unexpected field %d of type %d", gr, num, typ))
		}
		b, err := d.readN(r, n)
		if err != nil {
			return "", "", d.decodeError(fmt.Errorf("read list of %s: %w", gr, err))
		}
		switch num {
		case listMetaField:
			if err := lm.Unmarshal(b); err != nil {
				return "", "", d.decodeError(fmt.Errorf("decode list metadata of %s: %w", gr, err))
			}
			rv, cont = lm.ResourceVersion, lm.Continue
			sawMeta = true
		case listItemsField:
			obj, reused, err := d.Object(b)
			if err != nil {
				return "", "", d.decodeError(err)
			}
			item(obj, reused)
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
func (d *Decoder) readN(r io.Reader, n uint64) ([]byte, error) {
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

// growTo is the capacity for a buffer of capacity c that must hold n bytes: with
// headroom, so that objects of slowly growing sizes do not reallocate it each time.
func growTo(c, n int) int {
	return max(n+n/4, 2*c)
}

func statusError(msg []byte) error {
	var st metav1.Status
	if err := st.Unmarshal(msg); err != nil {
		return fmt.Errorf("decode status: %w", err)
	}
	return &apierrors.StatusError{ErrStatus: st}
}
