package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/profile"
)

// MeasureSpec is one measurement of one mode.
type MeasureSpec struct {
	Mode      Mode
	Config    *rest.Config
	Namespace string
	Resource  schema.GroupVersionResource
	Plan      Plan
	// Relist asks for the re-list with this index (from 1) to be forced, and
	// returns once the watch has been ended, with the number of watches ended.
	Relist func(ctx context.Context, index int) (int, error)
	// Events, when set, receives progress.
	Events func(Event)
}

// Event is progress from a measurement.
type Event struct {
	// Kind is "syncing", "synced", "relist" (started) or "relisted".
	Kind    string  `json:"kind"`
	Index   int     `json:"index,omitempty"`
	Objects int     `json:"objects,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// PeakRatio is the window's peak heap over the live heap.
	PeakRatio float64 `json:"peakRatio,omitempty"`
	// Error is set on a re-list that failed.
	Error string `json:"error,omitempty"`
}

// handlerCounts counts the events the informer delivers; a forced re-list is
// complete when it has delivered an update for every object it had.
type handlerCounts struct{ adds, updates, deletes atomic.Int64 }

func (h *handlerCounts) OnAdd(any, bool)   { h.adds.Add(1) }
func (h *handlerCounts) OnUpdate(any, any) { h.updates.Add(1) }
func (h *handlerCounts) OnDelete(any)      { h.deletes.Add(1) }

// delivered counts adds and updates: after a re-list, an object that is new to
// the store arrives as an add.
func (h *handlerCounts) delivered() int64 { return h.updates.Load() + h.adds.Load() }

// pollEvery is how often the measurement checks for a sync or a finished
// re-list: often enough to time a sync of a few hundred milliseconds.
const pollEvery = 5 * time.Millisecond

// Measure runs one mode in this process and measures it: the sync, an idle
// window, and the forced re-lists. It is what a child process runs; heaps of
// different modes must not share a process, so call it once per process for
// figures that mean something.
func Measure(ctx context.Context, spec MeasureSpec) (res Result, err error) {
	plan := spec.Plan
	if err := plan.Validate(); err != nil {
		return res, err
	}
	res = Result{Mode: spec.Mode.Name, Title: spec.Mode.Title, Resource: spec.Resource.Resource, Streaming: spec.Mode.Streaming}
	emit := func(e Event) {
		if spec.Events != nil {
			spec.Events(e)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	traffic := newTraffic(start, spec.Resource.Resource)
	cfg := rest.CopyConfig(spec.Config)
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return traffic.wrap(rt)
	}

	runtime.GC()
	res.BaselineHeap = heapObjects()
	sampler := StartSampler(ctx, start, plan.SampleEvery.D())
	probe := StartProbe(ctx, start, plan.ProbeEvery.D())
	samplingStopped := false
	stopSampling := func() {
		if !samplingStopped {
			samplingStopped = true
			sampler.Stop()
			probe.Stop()
		}
	}
	defer stopSampling()

	var (
		h       handlerCounts
		markers []Marker
		mark    = func(t time.Duration, label string) {
			markers = append(markers, Marker{Seconds: t.Seconds(), Label: label})
		}
	)
	rt0 := profile.ReadRuntime()
	t0 := since()
	emit(Event{Kind: "syncing"})
	c, err := spec.Mode.Start(ctx, Env{
		Config: cfg, Namespace: spec.Namespace, Resource: spec.Resource, Handler: &h, Streaming: spec.Mode.Streaming,
	})
	if err != nil {
		return res, fmt.Errorf("start mode %s: %w", spec.Mode.Name, err)
	}
	stopped := false
	stopCache := func() {
		if !stopped {
			stopped = true
			c.Stop()
		}
	}
	defer stopCache()
	mark(t0, "start")

	if err := waitFor(ctx, plan.SyncTimeout.D(), c.HasSynced); err != nil {
		return res, fmt.Errorf("sync %s of %s: %w", spec.Resource.Resource, spec.Mode.Name, err)
	}
	tSync := since()
	res.SyncSeconds = (tSync - t0).Seconds()
	res.SyncBytes = traffic.bytes.Load()
	res.Objects = c.Len()
	mark(tSync, "synced")
	emit(Event{Kind: "synced", Objects: res.Objects, Seconds: res.SyncSeconds})
	if err := sleep(ctx, plan.Settle.D()); err != nil {
		return res, err
	}
	tInitEnd, rtInitEnd := since(), profile.ReadRuntime()
	runtime.GC()
	res.LiveHeap = heapObjects()
	res.LiveRSS = openStatm().readAndClose()
	if res.Objects > 0 && res.LiveHeap > res.BaselineHeap {
		res.BytesPerObject = float64(res.LiveHeap-res.BaselineHeap) / float64(res.Objects)
	}

	tIdle0, rtIdle0 := since(), profile.ReadRuntime()
	if err := sleep(ctx, plan.Idle.D()); err != nil {
		return res, err
	}
	tIdle1, rtIdle1 := since(), profile.ReadRuntime()

	type relistTimes struct {
		t0, t1 time.Duration
		rt0    profile.RuntimeSnapshot
		rt1    profile.RuntimeSnapshot
	}
	times := make([]relistTimes, plan.Relists)
	for k := 1; k <= plan.Relists; k++ {
		rl := Relist{Index: k}
		want := int64(c.Len())
		base := h.delivered()
		lists0 := 0
		if c.Lists != nil {
			lists0 = c.Lists()
		}
		bytes0 := traffic.bytes.Load()
		rtK0, tK0 := profile.ReadRuntime(), since()
		mark(tK0, fmt.Sprintf("410 #%d", k))
		emit(Event{Kind: "relist", Index: k})
		ended, err := spec.Relist(ctx, k)
		rl.WatchesEnded = ended
		if err == nil {
			err = waitFor(ctx, plan.RelistTimeout.D(), func() bool {
				if c.Lists != nil {
					return c.Lists() > lists0
				}
				if want == 0 { // nothing to deliver: a new list request is the sign
					return traffic.lastList.Load() > int64(tK0)
				}
				return h.delivered()-base >= want
			})
		}
		tDone := since()
		rl.Updates = int(h.delivered() - base)
		if listAt := time.Duration(traffic.lastList.Load()); listAt > tK0 {
			rl.Seconds = (tDone - listAt).Seconds()
		} else {
			rl.Seconds = (tDone - tK0).Seconds()
		}
		if err != nil {
			rl.Error = err.Error()
		} else {
			mark(tDone, fmt.Sprintf("re-list #%d done", k))
		}
		if serr := sleep(ctx, plan.Settle.D()); serr != nil {
			return res, serr
		}
		tK1, rtK1 := since(), profile.ReadRuntime()
		rl.BytesReceived = traffic.bytes.Load() - bytes0
		runtime.GC()
		rl.LiveHeapAfter = heapObjects()
		times[k-1] = relistTimes{tK0, tK1, rtK0, rtK1}
		res.Relists = append(res.Relists, rl)
		peak, _ := sampler.Peak(tK0, tK1)
		emit(Event{Kind: "relisted", Index: k, Seconds: rl.Seconds, PeakRatio: ratio(peak, res.LiveHeap), Error: rl.Error})
		if err != nil && ctx.Err() != nil {
			return res, err
		}
	}
	tEnd, rtEnd := since(), profile.ReadRuntime()
	res.BytesReceived = traffic.bytes.Load()
	res.ListPath.Client = traffic.requests()
	res.ListPath.Library = "unknown"
	if c.ListPath != nil {
		if p := c.ListPath(); p != "" {
			res.ListPath.Library = p
		}
	}
	stopCache()
	stopSampling()

	// Everything below reads what the sampler and the probe recorded; it runs
	// after the measurement so that its own allocations are not measured.
	window := func(from, to time.Duration, rtFrom, rtTo profile.RuntimeSnapshot) Window {
		peakHeap, peakRSS := sampler.Peak(from, to)
		return Window{
			StartSeconds: from.Seconds(), EndSeconds: to.Seconds(),
			PeakHeap: peakHeap, PeakRSS: peakRSS, PeakRatio: ratio(peakHeap, res.LiveHeap),
			Probe:   probe.Window(from, to),
			Runtime: runtimeStats(rtFrom, rtTo),
		}
	}
	res.InitialSync = window(t0, tInitEnd, rt0, rtInitEnd)
	res.Idle = window(tIdle0, tIdle1, rtIdle0, rtIdle1)
	for i, tm := range times {
		res.Relists[i].Window = window(tm.t0, tm.t1, tm.rt0, tm.rt1)
	}
	res.Whole = window(t0, tEnd, rt0, rtEnd)
	res.Series = seriesOf(Downsample(sampler.Samples(), plan.SeriesPoints))
	res.Markers = markers
	return res, nil
}

func ratio(peak, live uint64) float64 {
	if live == 0 {
		return 0
	}
	return float64(peak) / float64(live)
}

// heapObjects reads /memory/classes/heap/objects:bytes; right after a
// runtime.GC it is the live heap.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// readAndClose reads the RSS once.
func (s *statm) readAndClose() uint64 {
	if s == nil {
		return 0
	}
	defer s.Close()
	return s.read()
}

var errTimeout = errors.New("timed out")

// waitFor polls cond until it holds, ctx ends or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s", errTimeout, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
