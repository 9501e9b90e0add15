package reflector

import (
	"fmt"
	"sync"
)

// StreamingMode chooses how an informer lists: with a streaming list (a watch
// with sendInitialEvents, client-go's WatchListClient) or with a paged LIST.
// leanstore maps its own StreamingMode onto it.
type StreamingMode int

const (
	// StreamingAuto tries a streaming list and falls back to a paged LIST when
	// the server refuses it; after a refusal the factory remembers it (see
	// StreamingState) and lists with LIST from then on.
	StreamingAuto StreamingMode = iota
	// StreamingOn always tries a streaming list first, at every list.
	StreamingOn
	// StreamingOff always lists with a paged LIST.
	StreamingOff
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
