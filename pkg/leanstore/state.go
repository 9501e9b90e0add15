package leanstore

import (
	"sync"
)

// factoryState is what a factory's informers learn about the server together:
// whether it refuses streaming lists.
type factoryState struct {
	mu            sync.Mutex
	refusedReason string
}

// refuse records that the server refused a streaming list. With StreamingAuto the
// factory stops asking; with StreamingOn it asks again at every list.
func (s *factoryState) refuse(mode StreamingMode, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mode == StreamingAuto {
		s.refusedReason = "the server refused streaming lists (" + err.Error() + "); listing with LIST from now on"
	} else {
		s.refusedReason = "the server refused this streaming list (" + err.Error() + ")"
	}
}

func (s *factoryState) refused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusedReason != ""
}

func (s *factoryState) streamingReason() string { return "streaming list served by the server" }

func (s *factoryState) pagedReason(mode StreamingMode) string {
	if mode == StreamingOff {
		return "streaming lists are off (WithStreamingLists(StreamingOff))"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refusedReason
}
