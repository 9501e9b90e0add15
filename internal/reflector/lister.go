package reflector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cachetune/cachetune/pkg/failure"
)

// Lists. client-go's reflector decodes a whole LIST (or collects a whole
// streaming list) before its transform runs, and on a re-list it builds a full
// second copy of the store next to the first. leanstore lists object by object
// instead: each object is stripped as soon as it is decoded, a paged LIST
// releases each page before asking for the next, and an object whose uid and
// resourceVersion match the handed one is replaced by it at once, so a re-list
// of an unchanged store allocates almost nothing that lives.

// lister makes an informer's complete lists: by a streaming list
// (streamingList), whose open stream it leaves in next for the watch, or by a
// paged LIST (pagedList), and falls back from one to the other. Each object is stripped as soon as it is
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

	// takenIn reports whether the informer has taken in its first list (its
	// HasSynced); nil until set (ListWatch.GuardHandOver).
	takenIn func() bool

	mu sync.Mutex
	// lastCount is the size of the last list, to size the next one's slice.
	lastCount int

	// handOver is the pacer of the last guarded list (a first list, or a
	// re-list of packed objects), whose guard the informer's goroutines tick
	// as they take its objects in (ListWatch.Unpacked, Indexed and
	// Delivered).
	handOver atomic.Pointer[Pacer]
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

// bound is the heap bound of the informer's lists: the one asked for, or,
// when the lists pack their objects, with half its margin. A packed list's
// live heap holds, beside the bytes the store will keep, the packs'
// metadata and the informer's queue, which the store does not, so a peak
// within the bound of the list's live heap would be beyond it of the
// store's.
func (ls *lister) bound() float64 {
	if ls.c.pack == nil || ls.heapBound <= 1 {
		return ls.heapBound
	}
	return 1 + (ls.heapBound-1)/2
}

// listRV is the resourceVersion a list asks for, given the reflector's.
//
// The reflector asks for "0" on its first list: any version, which the API
// server answers from its watch cache in one response, ignoring the page size.
// leanstore asks for "" instead, a consistent read, for two reasons: its paged
// LIST then really pages (the decoder streams each page, so a page bounds the
// memory a list needs), and a controller that restarts never starts from a
// watch cache older than what it saw before the restart. The API server serves
// consistent lists from its watch cache too (ConsistentListFromCache, on since
// Kubernetes 1.31), after one quorum read of etcd's current revision; see
// docs/memory.md for the measured server cost of both.
func listRV(reflectorRV string) string {
	if reflectorRV == "0" {
		return ""
	}
	return reflectorRV
}

// list lists every object from rv ("" for the latest), by a streaming list or a
// paged LIST, retrying with backoff until it succeeds or ctx ends.
func (ls *lister) list(ctx context.Context, rv string) (listResult, error) {
	retry := ls.c.retry
	l := &listRun{rv: rv, pace: NewPacer(ls.bound()).Relisting(retry.Synced.Load()).ReportTo(ls.c.report),
		failure: FailedAttempt{Reason: failure.InitialListFailed, Relist: retry.Synced.Load()}}
	for {
		if err := ls.prepare(ctx); err != nil {
			if ctx.Err() != nil || !retry.Failed(ctx, l.failure, err, nil) {
				return listResult{}, ctx.Err()
			}
			continue
		}
		if ls.useStreaming() && l.streamFailures < maxStreamFailures {
			sl := streamingList{c: ls.c, next: ls.next, idleTimeout: ls.idleTimeout, sizeHint: ls.sizeHint()}
			res, err := sl.list(ctx, l.rv, l.pace)
			if err == nil {
				res.handedOver = ls.finish(ctx, l)
				return ls.listed(res, ListPathStreaming, ls.refusals.streamingReason()), nil
			}
			switch ls.streamingFailed(ctx, l, err) {
			case listEnded:
				return listResult{}, ctx.Err()
			case listAgain:
				continue
			}
		}
		res, err := pagedList{c: ls.c, pageSize: ls.pageSize, sizeHint: ls.sizeHint()}.list(ctx, l.rv, l.pace)
		if err == nil {
			res.handedOver = ls.finish(ctx, l)
			why := l.pagedWhy
			if why == "" {
				why = ls.pagedReason()
			}
			return ls.listed(res, ListPathPaged, why), nil
		}
		if !ls.pagedFailed(ctx, l, err) {
			return listResult{}, ctx.Err()
		}
	}
}

// finish ends a successful list: the pacer collects the list's garbage and,
// for a first list, guards the heap while the informer takes the list in. A
// re-list of packed objects is guarded too, since the informer decodes each
// changed object as it applies it: until the list's caller has handed it
// over (the function returned) and the informer has taken every stand-in a
// re-list inside the watch sent (Handed.StandIn), and a grace after. A
// re-list of decoded objects hands over objects already allocated, and is
// not guarded.
func (ls *lister) finish(ctx context.Context, l *listRun) (handedOver func()) {
	l.pace.Finish()
	if ls.c.pack != nil || !l.failure.Relist {
		ls.handOver.Store(l.pace)
	}
	switch {
	case !l.failure.Relist && ls.c.pack != nil:
		l.pace.GuardPackedHandOver(ctx, ls.takenIn)
	case !l.failure.Relist:
		l.pace.GuardHandOver(ctx, ls.takenIn)
	case ls.c.pack != nil:
		var done atomic.Bool
		l.pace.GuardPackedHandOver(ctx, func() bool { return done.Load() && ls.c.handed.standInsPending() == 0 })
		return func() { done.Store(true) }
	}
	return func() {}
}

// listRun is one list's state across its attempts.
type listRun struct {
	// rv is the resourceVersion to list from; "" once it expired.
	rv      string
	pace    *Pacer
	failure FailedAttempt
	// streamFailures counts this list's failed streaming lists: after
	// maxStreamFailures the list uses a paged LIST, whose failures are
	// retried with cheap probes (see RetryState.WaitOrHealed) and
	// so recover as soon as the server does.
	streamFailures int
	// pagedWhy says why the list fell back to a paged LIST, when it did.
	pagedWhy string
}

// listStep is what a list does after a failed streaming list.
type listStep int

const (
	listAgain listStep = iota // from the top, streaming again if it may
	listPaged                 // with a paged LIST right away
	listEnded                 // not at all: ctx ended
)

// prepare readies a list: with sharding it takes the membership's latest
// ring (Shard.Apply) and waits for the membership to be ready; then the
// source resolves the resource.
func (ls *lister) prepare(ctx context.Context) error {
	if err := ls.c.shard.Apply(ctx); err != nil {
		return err
	}
	return ls.c.src.Resolve(ctx)
}

// streamingFailed reports a failed streaming list, waits out the backoff
// where one is due, and says what the list does next.
func (ls *lister) streamingFailed(ctx context.Context, l *listRun, err error) listStep {
	if ctx.Err() != nil {
		return listEnded
	}
	f := l.failure
	f.Streaming = true
	switch {
	case errors.Is(err, errAnsweredJSON):
		ls.c.answeredJSON(err)
		return listAgain
	case errors.Is(err, errNoInitialEventsEnd):
		f.Reason = failure.InitialEventsEndMissing
		ls.c.retry.Report(ctx, f, err, 0)
		ls.refusals.refuse(ls.streaming, err)
		return listPaged
	case refusesStreaming(err):
		ls.refusals.refuse(ls.streaming, err)
		return listPaged
	case errors.Is(err, ErrStalled):
		// Nothing came, not even the end of the initial events: list with
		// LIST this time rather than wait another idle period.
		ls.c.retry.Report(ctx, f, err, 0)
		return listPaged
	case isExpired(err) && l.rv != "":
		ls.c.retry.Report(ctx, f, err, 0)
		l.rv = ""
		return listAgain
	case isExpired(err):
		// Expired from the latest resourceVersion: no resourceVersion was
		// too old, so the server (or a proxy before it) expires the stream
		// itself, and another streaming list would meet the same answer. A
		// paged LIST asks the same differently, after the backoff: a server
		// that expires every watch would otherwise see a watch, a streaming
		// list and a LIST at once on every round.
		l.pagedWhy = "a streaming list from the latest resourceVersion expired (410); listing with LIST this time"
		if !ls.c.retry.Failed(ctx, f, err, nil) {
			return listEnded
		}
		return listPaged
	}
	if l.streamFailures++; l.streamFailures >= maxStreamFailures {
		ls.c.retry.Report(ctx, f, err, 0)
		l.pagedWhy = fmt.Sprintf("%d streaming lists failed in a row; listing with LIST this time", l.streamFailures)
		return listPaged
	}
	if !ls.c.retry.Failed(ctx, f, err, nil) {
		return listEnded
	}
	return listAgain
}

// pagedFailed reports a failed paged LIST and waits out the backoff (probed,
// see probeList) where one is due; false means ctx ended.
func (ls *lister) pagedFailed(ctx context.Context, l *listRun, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch {
	case errors.Is(err, errAnsweredJSON):
		ls.c.answeredJSON(err)
		return true
	case isExpired(err) && l.rv != "":
		ls.c.retry.Report(ctx, l.failure, err, 0)
		l.rv = ""
		return true
	}
	return ls.c.retry.Failed(ctx, l.failure, err, ls.probeList)
}

// maxStreamFailures is how many streaming lists in a row may fail before a
// list falls back to a paged LIST for this once.
const maxStreamFailures = 2

// probeList asks whether lists work again with a list of one object, decoded
// by the client: a fraction of the cost of the list that failed.
func (ls *lister) probeList(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := ls.c.src.List(ctx, ls.c.scope(metav1.ListOptions{Limit: 1}))
	return err
}
