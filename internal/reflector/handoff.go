package reflector

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// handoff is what a list or a watch leaves for the next WatchWithContext: the
// open stream of a streaming list, which that watch continues on, or the word
// that a re-list inside the watch was cut short, after which the reflector
// must list again.
type handoff struct {
	mu sync.Mutex
	// pending is the stream of the last streaming list, for the next Watch.
	pending *pendingStream
	// diffCut is set when a re-list's differences could not all be handed to
	// the reflector (the watch was stopped part-way): the next watch must not
	// resume from the reflector's resourceVersion, which may be past a
	// deletion it was never told about.
	diffCut bool
}

// pendingStream is a streaming list's watch after its initial events: the
// reflector's next Watch from that resourceVersion continues on it, as client-go
// itself does, instead of opening a second request. It is stopped when the
// list's context ends before anyone takes it.
type pendingStream struct {
	w       watch.Interface
	rv      string
	final   bool        // its objects are final (see leanWatch.final)
	release func() bool // stops the context.AfterFunc that would stop w
}

// put keeps w for the next Watch from rv, and stops it if ctx ends first.
func (h *handoff) put(ctx context.Context, w watch.Interface, rv string, final bool) {
	p := &pendingStream{w: w, rv: rv, final: final}
	p.release = context.AfterFunc(ctx, func() {
		h.mu.Lock()
		if h.pending == p {
			h.pending = nil
		}
		h.mu.Unlock()
		p.w.Stop()
	})
	h.mu.Lock()
	old := h.pending
	h.pending = p
	h.mu.Unlock()
	if old != nil && old.release() {
		old.w.Stop()
	}
}

// take returns the pending stream if it continues from rv; any other pending
// stream is stopped.
func (h *handoff) take(rv string) *pendingStream {
	h.mu.Lock()
	p := h.pending
	h.pending = nil
	h.mu.Unlock()
	if p == nil {
		return nil
	}
	if !p.release() {
		return nil // the list's context ended, which stops the watch
	}
	if p.rv != rv {
		p.w.Stop()
		return nil
	}
	return p
}

// drop stops the pending stream, if any.
func (h *handoff) drop() {
	h.mu.Lock()
	p := h.pending
	h.pending = nil
	h.mu.Unlock()
	if p != nil && p.release() {
		p.w.Stop()
	}
}

// cut records that a re-list's differences were cut short, and drops the
// pending stream: the reflector must list again.
func (h *handoff) cut() {
	h.mu.Lock()
	h.diffCut = true
	h.mu.Unlock()
	h.drop()
}

// cutShort reports whether a re-list's differences were cut short since the
// last list.
func (h *handoff) cutShort() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.diffCut
}

// listed records a list handed to the reflector whole: it replaces whatever
// a cut re-list left behind.
func (h *handoff) listed() {
	h.mu.Lock()
	h.diffCut = false
	h.mu.Unlock()
}
