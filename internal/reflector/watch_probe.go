package reflector

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// probeSettle is how long a probe watch must stay open without expiring to
// count as working: a server that expires a watch does so in its first frame.
const probeSettle = 500 * time.Millisecond

// watchProbe is the probe (see RetryState.WaitOrHealed) of an informer whose watch from
// a resourceVersion failed to start, broke, or expired at its start: it opens
// the same watch and calls it working when its first frame is a good event,
// or when nothing breaks it for probeSettle. The working watch is kept, and
// the caller takes it as its watch instead of stopping it and opening the same
// watch again.
type watchProbe struct {
	c    *conn
	opts metav1.ListOptions
	got  *probedWatch
}

// probedWatch is a watch a probe found working.
type probedWatch struct {
	w watch.Interface
	// final is true when w's objects are final (see leanWatch.final).
	final bool
	// first is the event the probe read from w, if any: it is handed on
	// before anything else.
	first *watch.Event
}

// newWatchProbe probes watches from opts.ResourceVersion, opts being the
// reflector's watch options.
func newWatchProbe(c *conn, opts metav1.ListOptions) *watchProbe {
	return &watchProbe{c: c, opts: opts}
}

// probe opens the watch and waits for its first frame. A failure is returned
// and the probe's watch stopped; a working watch is kept for take.
func (p *watchProbe) probe(ctx context.Context) error {
	p.discard()
	b := &probeBreaks{report: p.c.watchStreamBroke(ctx)}
	w, d, err := p.c.openWatch(ctx, p.opts, b.broke)
	if err != nil {
		return err
	}
	first, err := settle(ctx, w, b.err)
	if err != nil {
		w.Stop()
		return err
	}
	b.adopt()
	p.got = &probedWatch{w: w, final: d != nil, first: first}
	return nil
}

// take returns the watch the last probe found working, or nil; the caller
// owns it.
func (p *watchProbe) take() *probedWatch {
	pw := p.got
	p.got = nil
	return pw
}

// discard stops a working watch nobody took.
func (p *watchProbe) discard() {
	if pw := p.take(); pw != nil {
		pw.w.Stop()
	}
}

// settle waits for a probe watch's first frame: a good event is returned, a
// watch quiet for probeSettle returns nil, and a watch that closes, breaks or
// starts with an ERROR event (a 410 among them) returns why.
func settle(ctx context.Context, w watch.Interface, broke func() error) (*watch.Event, error) {
	t := time.NewTimer(probeSettle)
	defer t.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		switch {
		case !ok && broke() != nil:
			return nil, broke()
		case !ok:
			return nil, errors.New("the probe watch closed before its first event")
		case ev.Type == watch.Error:
			return nil, apierrors.FromObject(ev.Object)
		}
		return &ev, nil
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
