package leanstore

import (
	"fmt"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/util/watchlist"

	"github.com/cachetune/cachetune/internal/reflector"
)

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

// loopStreaming is m as the list/watch loop (internal/reflector) reads it.
func loopStreaming(m StreamingMode) reflector.StreamingMode {
	switch m {
	case StreamingOn:
		return reflector.StreamingOn
	case StreamingOff:
		return reflector.StreamingOff
	}
	return reflector.StreamingAuto
}
