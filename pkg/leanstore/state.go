package leanstore

import (
	"fmt"
	"sync"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/util/watchlist"
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

// effectiveStreaming is the streaming mode of an informer that lists through
// client, and why when it is not the one asked for: StreamingAuto follows client-go's WatchListClient
// feature gate when the process turned it off (KUBE_FEATURE_WatchListClient=false
// in the environment, or client-go's features package), as client-go's own
// informers would; StreamingOn and StreamingOff are the caller's explicit choice.
// Like client-go, it reads the gate when an informer is built.
//
// A client that says it cannot serve streaming lists (client-go's fake dynamic
// and metadata clients do, see watchlist.DoesClientNotSupportWatchListSemantics)
// lists with LIST whatever the mode, as client-go's factories do.
func effectiveStreaming(m StreamingMode, client any) (StreamingMode, string) {
	if client != nil && watchlist.DoesClientNotSupportWatchListSemantics(client) {
		return StreamingOff, fmt.Sprintf("the client (%T) does not support streaming lists", client)
	}
	if m == StreamingAuto && !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		return StreamingOff, "client-go's WatchListClient feature gate is off (KUBE_FEATURE_WatchListClient=false, or client-go's features package)"
	}
	return m, ""
}
