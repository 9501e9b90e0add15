package reflector

import (
	"fmt"
	"sync"
)

// StreamingMode chooses how an informer lists: leanstore's StreamingMode
// (WithStreamingLists, which documents each mode), mapped onto the loop's own
// so that this package needs nothing of leanstore.
type StreamingMode int

const (
	StreamingAuto StreamingMode = iota // a streaming list until the server refuses one (see StreamingState)
	StreamingOn                        // a streaming list first, at every list
	StreamingOff                       // a paged LIST, always
)

func (m StreamingMode) String() string {
	switch m {
	case StreamingAuto:
		return "auto"
	case StreamingOn:
		return "on"
	case StreamingOff:
		return "off"
	}
	return fmt.Sprintf("StreamingMode(%d)", int(m))
}

// StreamingState is what the informers of one factory learn about the server
// together: whether it refuses streaming lists. Its zero value is ready.
type StreamingState struct {
	mu            sync.Mutex
	refusedReason string
}

// refuse records that the server refused a streaming list. With StreamingAuto
// the factory stops asking; with StreamingOn it asks again at every list.
func (s *StreamingState) refuse(mode StreamingMode, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mode == StreamingAuto {
		s.refusedReason = "the server refused streaming lists (" + err.Error() + "); listing with LIST from now on"
	} else {
		s.refusedReason = "the server refused this streaming list (" + err.Error() + ")"
	}
}

func (s *StreamingState) refused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusedReason != ""
}

func (s *StreamingState) streamingReason() string { return "streaming list served by the server" }

func (s *StreamingState) pagedReason(mode StreamingMode) string {
	if mode == StreamingOff {
		return "streaming lists are off (WithStreamingLists(StreamingOff))"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusedReason
}
