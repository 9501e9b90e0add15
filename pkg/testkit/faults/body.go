package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// errCut makes the reverse proxy abort the client connection: any error from a
// response body does (it panics with http.ErrAbortHandler), so the client
// sees the stream end without a proper end of chunked encoding.
var errCut = errors.New("faults: connection cut")

// maxFrame bounds one watch frame, as a guard against reading a corrupt
// length prefix; the API server's own limit for a request or object is far
// below it.
const maxFrame = 256 << 20

// streamBody forwards a watch stream frame by frame, so that faults can be
// written at a frame boundary: an ERROR event after n events, a garbage frame,
// or, when EndWatches injects one, whatever that fault writes.
type streamBody struct {
	up      io.ReadCloser
	br      *bufio.Reader
	enc     encoding
	req     request
	fault   Fault              // from the rule that picked this request
	acted   func()             // counts fault as having acted (see Counter)
	client  context.Context    // ends when the client goes or the proxy closes
	abortUp context.CancelFunc // cancels the upstream request

	mu       sync.Mutex
	injected Fault
	// injectedActed counts injected as having acted (see EndWatchesCounted).
	injectedActed func()

	started bool
	frames  int
	out     []byte // bytes due to the client before anything else
	err     error  // returned once out is drained
	frame   []byte // reused frame buffer
}

func newStreamBody(up io.ReadCloser, enc encoding, req request, f Fault, client context.Context, abortUp context.CancelFunc, acted func()) *streamBody {
	if acted == nil {
		acted = func() {}
	}
	return &streamBody{
		up: up, br: bufio.NewReaderSize(up, 64<<10), enc: enc, req: req, fault: f, acted: acted,
		client: client, abortUp: abortUp,
	}
}

// inject makes the stream act on f at its next frame boundary, and call acted
// when it does. The upstream request is cancelled so that a read waiting for
// the next event returns now.
func (s *streamBody) inject(f Fault, acted func()) {
	s.mu.Lock()
	s.injected, s.injectedActed = f, acted
	s.mu.Unlock()
	s.abortUp()
}

func (s *streamBody) takeInjected() (Fault, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, acted := s.injected, s.injectedActed
	s.injected, s.injectedActed = Fault{}, nil
	return f, acted
}

func (s *streamBody) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if f, acted := s.takeInjected(); !f.IsZero() {
			s.act(f, acted)
			continue
		}
		if !s.started {
			s.started = true
			switch s.fault.kind {
			case gone:
				s.act(s.fault, s.acted)
				continue
			case malformed:
				s.acted()
				s.out = garbageFrame(s.enc)
				continue
			}
		}
		if s.fault.kind == goneAfterEvents && s.frames >= s.fault.n {
			s.act(s.fault, s.acted)
			continue
		}
		frame, err := s.next()
		if f, acted := s.takeInjected(); !f.IsZero() {
			// inject cancelled the read, or a frame came in before the
			// cancellation reached it: either way the fault comes first, and
			// nothing written after EndWatches reaches the client.
			s.act(f, acted)
			continue
		}
		if err != nil {
			s.err = err
			continue
		}
		if s.fault.kind == dropInitialEventsEnd && isBookmark(frame) {
			s.acted()
			continue
		}
		s.frames++
		s.out = frame
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// isBookmark reports whether a watch frame (JSON or protobuf) is a BOOKMARK
// event. Both encodings carry the event type as plain text near the start of
// the frame: {"type":"BOOKMARK", or field 1 of the WatchEvent message.
func isBookmark(frame []byte) bool {
	head := frame[:min(len(frame), 32)]
	return bytes.Contains(head, []byte("BOOKMARK"))
}

// act applies a fault at a frame boundary, and counts it with acted.
func (s *streamBody) act(f Fault, acted func()) {
	switch f.kind {
	case gone, goneAfterEvents, status, cut, truncate, malformed, stall, slow:
		if acted != nil {
			acted()
		}
	}
	switch f.kind {
	case gone, goneAfterEvents, status:
		ev, err := errorEvent(s.enc, statusFor(f, s.req))
		if err != nil {
			s.err = errCut
			return
		}
		s.out = ev
		s.err = io.EOF
		s.abortUp()
	case cut:
		s.err = errCut
		s.abortUp()
	case truncate:
		s.err = io.EOF // a clean end, as when the server's watch time-out expires
		s.abortUp()
	case malformed:
		s.out = garbageFrame(s.enc)
	case stall:
		s.abortUp()
		<-s.client.Done()
		s.err = s.client.Err()
	case slow:
		// Rate is a property of the whole response; on a live stream it has
		// no frame-level meaning, so it ends the stream cleanly instead.
		s.err = io.EOF
		s.abortUp()
	}
}

// next reads one frame of the upstream stream into a reused buffer.
func (s *streamBody) next() ([]byte, error) {
	s.frame = s.frame[:0]
	switch s.enc {
	case encProtobuf:
		var hdr [4]byte
		if _, err := io.ReadFull(s.br, hdr[:]); err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			return nil, fmt.Errorf("watch frame of %d bytes", n)
		}
		s.frame = append(s.frame, hdr[:]...)
		s.frame = grow(s.frame, int(n))
		if _, err := io.ReadFull(s.br, s.frame[4:]); err != nil {
			return nil, unexpected(err)
		}
		return s.frame, nil
	default:
		return s.nextJSON()
	}
}

// nextJSON reads one top-level JSON value and the whitespace after it up to
// and including a newline: the API server writes each event as a JSON object
// followed by "\n". It tracks strings and nesting only, which is enough to
// find the end of a value without decoding it.
func (s *streamBody) nextJSON() ([]byte, error) {
	depth := 0
	inString, escaped, begun := false, false, false
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			if begun {
				return nil, unexpected(err)
			}
			return nil, err
		}
		s.frame = append(s.frame, c)
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString, begun = true, true
		case c == '{' || c == '[':
			depth++
			begun = true
		case c == '}' || c == ']':
			depth--
			if depth <= 0 {
				if next, err := s.br.Peek(1); err == nil && next[0] == '\n' {
					_, _ = s.br.ReadByte() // cannot fail: Peek just saw the byte
					s.frame = append(s.frame, '\n')
				}
				return s.frame, nil
			}
		}
	}
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (s *streamBody) Close() error {
	s.abortUp()
	return s.up.Close()
}

// shapedBody applies the byte-level faults to any response body: Cut,
// Truncate, Slow and Stall.
type shapedBody struct {
	io.ReadCloser
	fault  Fault
	client context.Context
	sent   int
	start  time.Time
	// hit is called once when a Cut or Truncate acts, to count the request
	// as faulted then: a body shorter than where it cuts is never counted,
	// not even while it is still being read.
	hit func()
	// acted is called when the fault takes effect (see Counter).
	acted func()
}

func (b *shapedBody) Read(p []byte) (int, error) {
	switch b.fault.kind {
	case stall:
		b.acted()
		<-b.client.Done()
		return 0, b.client.Err()
	case cut, truncate:
		left := b.fault.n - b.sent
		if left <= 0 {
			if b.hit != nil {
				b.hit()
				b.hit = nil
			}
			b.acted()
			if b.fault.kind == cut {
				return 0, errCut
			}
			return 0, io.EOF
		}
		if len(p) > left {
			p = p[:left]
		}
	case slow:
		if b.start.IsZero() {
			b.start = time.Now()
			b.acted()
		}
		// Deliver at most a tenth of a second's worth at a time, and wait
		// until the bytes already sent are due.
		rate := max(b.fault.n, 1)
		if chunk := max(rate/10, 1); len(p) > chunk {
			p = p[:chunk]
		}
		due := b.start.Add(time.Duration(float64(b.sent) / float64(rate) * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-b.client.Done():
				t.Stop()
				return 0, b.client.Err()
			}
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.sent += n
	return n, err
}

// countingBody adds what the client receives to the proxy's counts.
type countingBody struct {
	io.ReadCloser
	add func(n int)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.add(n)
	return n, err
}
