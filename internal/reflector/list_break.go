package reflector

import "sync"

// listBreak holds what broke a streaming list's stream while its initial
// events were still coming; after them, a break is the watch's.
type listBreak struct {
	mu      sync.Mutex
	broken  error
	done    bool
	onWatch func(error)
}

func (b *listBreak) onBroken(onWatch func(error)) func(error) {
	b.onWatch = onWatch
	return func(err error) {
		b.mu.Lock()
		if b.done {
			b.mu.Unlock()
			b.onWatch(err)
			return
		}
		b.broken = err
		b.mu.Unlock()
	}
}

func (b *listBreak) listed() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

func (b *listBreak) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.broken
}
