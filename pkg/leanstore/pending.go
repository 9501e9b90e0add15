package leanstore

import (
	"context"

	"k8s.io/apimachinery/pkg/watch"
)

// setPending keeps w for the next Watch from rv, and stops it if ctx ends first.
func (lw *listWatch) setPending(ctx context.Context, w watch.Interface, rv string, final bool) {
	p := &pendingWatch{w: w, rv: rv, final: final}
	p.release = context.AfterFunc(ctx, func() {
		lw.mu.Lock()
		if lw.pending == p {
			lw.pending = nil
		}
		lw.mu.Unlock()
		p.w.Stop()
	})
	lw.mu.Lock()
	old := lw.pending
	lw.pending = p
	lw.mu.Unlock()
	if old != nil && old.release() {
		old.w.Stop()
	}
}

// takePending returns the pending watch if it continues from rv; any other
// pending watch is stopped.
func (lw *listWatch) takePending(rv string) *pendingWatch {
	lw.mu.Lock()
	p := lw.pending
	lw.pending = nil
	lw.mu.Unlock()
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

func (lw *listWatch) dropPending() {
	lw.mu.Lock()
	p := lw.pending
	lw.pending = nil
	lw.mu.Unlock()
	if p != nil && p.release() {
		p.w.Stop()
	}
}
