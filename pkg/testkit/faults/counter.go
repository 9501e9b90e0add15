package faults

import "sync/atomic"

// Counter counts what one rule, or one EndWatches call, did: how many
// requests (or live streams) it was given to, and on how many of them its
// fault took effect. A test that injects a fault reads Acted to know that the
// fault really happened: under load a stream may end before its n-th event,
// a list may be shorter than where a Truncate cuts, and a watch may not be
// open at the moment EndWatches looks for it.
//
// Give a Rule a Counter in its Counter field, or call EndWatchesCounted.
// Its methods are safe for concurrent use; the zero Counter is ready to use.
type Counter struct {
	fired, acted atomic.Int64
}

// Fired is the number of requests the rule picked (it matched, and Count,
// Skip and Probability let it fire), or of live streams EndWatchesCounted
// gave its fault to.
func (c *Counter) Fired() int {
	if c == nil {
		return 0
	}
	return int(c.fired.Load())
}

// Acted is the number of those on which the fault took effect: the client
// got the status, the cut or truncated body, the garbage, the ERROR event,
// the stall, the JSON answer to its request for protobuf, a streaming list
// without its bookmark. A stream counts when the proxy reaches the frame
// boundary where the fault acts, which may be a little after Fired counted
// it.
//
// What does not count: a Cut or Truncate past the end of the body, a
// TruncateAfterItems of a list too short to cut, a GoneAfterEvents on a
// stream that ended before its n-th event, DropInitialEventsEnd on a stream
// that carried no bookmark, AnswerJSON on a request that asked for JSON
// anyway, and a fault that needs a stream on a request whose answer was not
// one (an error status from the server).
func (c *Counter) Acted() int {
	if c == nil {
		return 0
	}
	return int(c.acted.Load())
}

func (c *Counter) fire() {
	if c != nil {
		c.fired.Add(1)
	}
}

// actOnce returns a function that counts one act of the fault on one
// request, however many times it is called: a request acts once.
func (c *Counter) actOnce() func() {
	if c == nil {
		return func() {}
	}
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			c.acted.Add(1)
		}
	}
}
