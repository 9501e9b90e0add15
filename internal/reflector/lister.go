package reflector

import (
	"sync"
	"time"
)

// lister makes an informer's complete lists (list.go): by a streaming list
// (list_streaming.go), whose open stream it leaves in next for the watch, or
// by a paged LIST (list_paged.go). Each object is stripped as soon as it is
// decoded, or replaced by the handed object when it is unchanged (conn.keep).
type lister struct {
	c *conn
	// next is where a streaming list leaves its stream for the next watch.
	next *handoff

	pageSize    int64
	idleTimeout time.Duration
	heapBound   float64
	// streaming is the informer's streaming mode and streamingWhy the reason
	// when it differs from the one asked for; refusals is what the factory
	// knows of the server's refusals of streaming lists.
	streaming    StreamingMode
	streamingWhy string
	refusals     *StreamingState

	mu sync.Mutex
	// lastCount is the size of the last list, to size the next one's slice.
	lastCount int
}

// sizeHint is the expected number of objects of the next list.
func (l *lister) sizeHint() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastCount
}

// listed records a successful list.
func (l *lister) listed(res listResult, path ListPath, reason string) listResult {
	l.c.retry.Listed(path, reason, len(res.items), res.reused)
	l.mu.Lock()
	l.lastCount = len(res.items)
	l.mu.Unlock()
	return res
}

// pagedReason says why the informer listed with a paged LIST.
func (l *lister) pagedReason() string {
	if l.streamingWhy != "" {
		return l.streamingWhy
	}
	return l.refusals.pagedReason(l.streaming)
}

func (l *lister) useStreaming() bool {
	switch l.streaming {
	case StreamingOff:
		return false
	case StreamingAuto:
		return !l.refusals.refused()
	}
	return true
}
