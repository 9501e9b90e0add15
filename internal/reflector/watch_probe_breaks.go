package reflector

import (
	"errors"
	"sync"
)

// probeBreaks is the broken-stream callback of a probe watch: while the
// watch is a probe, a break is only the probe's failure (it neither reaches
// the status reporter twice nor marks the informer's watch broken), except for a JSON
// answer, which switches the informer to JSON at once (see conn.answeredJSON);
// once the watch is adopted, breaks are reported as any watch's are.
type probeBreaks struct {
	mu      sync.Mutex
	adopted bool
	last    error
	report  func(error)
}

func (b *probeBreaks) broke(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.adopted || errors.Is(err, errAnsweredJSON) {
		b.report(err)
	}
	if !b.adopted {
		b.last = err
	}
}

func (b *probeBreaks) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// adopt makes the probe watch the informer's; a break that came after its
// first event, while it was still a probe, is reported now.
func (b *probeBreaks) adopt() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.adopted = true
	if b.last != nil && !errors.Is(b.last, errAnsweredJSON) {
		b.report(b.last)
	}
}
