package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/profile"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

// MeasureSpec is one measurement of one mode.
type MeasureSpec struct {
	Mode   Mode
	Config *rest.Config
	// Resources are cached together, each with its own informer, in this
	// process; usually there is one.
	Resources []ResourceRef
	Plan      Plan
	// Relist asks for the re-list with this index (from 1) to be forced, and
	// returns once the watches have been ended and the changes planned for
	// it written (the list-path requests the 410 sets off are held meanwhile).
	Relist func(ctx context.Context, index int) (RelistAnswer, error)
	// CPUProfile, when set, is a file to write a CPU profile of the initial
	// sync to (from the informers' start to HasSynced).
	CPUProfile string
	// Events, when set, receives progress.
	Events func(Event)
}

// RelistAnswer is what the parent did for a re-list: the watches it ended and
// the changes it wrote before letting the re-list go.
type RelistAnswer struct {
	Ended   int             `json:"ended"`
	Changes dataset.Changes `json:"changes"`
}

// Event is progress from a measurement.
type Event struct {
	// Kind is "syncing", "synced", "listed" (a reconcile list), "relist"
	// (started) or "relisted".
	Kind    string  `json:"kind"`
	Index   int     `json:"index,omitempty"`
	Objects int     `json:"objects,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	// PeakRatio is the window's peak heap over the live heap.
	PeakRatio float64 `json:"peakRatio,omitempty"`
	// Changes are those written before a re-list; Delivered what it delivered.
	Changes   *dataset.Changes `json:"changes,omitempty"`
	Delivered *Events          `json:"delivered,omitempty"`
	// AllocatedBytes is what a reconcile list allocated.
	AllocatedBytes uint64 `json:"allocatedBytes,omitempty"`
	// Error is set on a re-list that failed.
	Error string `json:"error,omitempty"`
}

// handlerCounts counts the events the informer delivers; a forced re-list is
// complete when it has delivered an update for every object it had.
type handlerCounts struct{ adds, updates, deletes atomic.Int64 }

func (h *handlerCounts) OnAdd(any, bool)   { h.adds.Add(1) }
func (h *handlerCounts) OnUpdate(any, any) { h.updates.Add(1) }
func (h *handlerCounts) OnDelete(any)      { h.deletes.Add(1) }

func (h *handlerCounts) events() Events {
	return Events{Adds: int(h.adds.Load()), Updates: int(h.updates.Load()), Deletes: int(h.deletes.Load())}
}

func (e Events) sub(o Events) Events {
	return Events{Adds: e.Adds - o.Adds, Updates: e.Updates - o.Updates, Deletes: e.Deletes - o.Deletes}
}

// pollEvery is how often the measurement checks for a sync or a finished
// re-list: often enough to time a sync of a few hundred milliseconds.
const pollEvery = 5 * time.Millisecond

// deliverWait bounds how long a library that reports its lists (leanstore)
// may take, after reporting a re-list complete, to deliver the changes it
// found: longer means changes were lost, which the re-list reports.
var deliverWait = 10 * time.Second

// Measure runs one mode in this process and measures it: the sync, an idle
// window, and the forced re-lists. It is what a child process runs; heaps of
// different modes must not share a process, so call it once per process for
// figures that mean something.
func Measure(ctx context.Context, spec MeasureSpec) (res Result, err error) {
	plan := spec.Plan
	if err := plan.Validate(); err != nil {
		return res, err
	}
	if len(spec.Resources) == 0 {
		return res, errors.New("no resource to cache")
	}
	var names []string
	for _, r := range spec.Resources {
		names = append(names, r.Resource)
	}
	res = Result{Mode: spec.Mode.Name, Title: spec.Mode.Title, Resource: strings.Join(names, ","), Streaming: spec.Mode.Streaming}
	emit := func(e Event) {
		if spec.Events != nil {
			spec.Events(e)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	start := time.Now()
	res.Started = start
	since := func() time.Duration { return time.Since(start) }
	traffic := newTraffic(start, names...)
	defer traffic.release()
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
	stopProfile := func() {}
	if spec.CPUProfile != "" {
		f, err := os.Create(spec.CPUProfile)
		if err != nil {
			return res, err
		}
		defer func() { _ = f.Close() }() // a profile that fails to close loses only itself
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, fmt.Errorf("start a CPU profile: %w", err)
		}
		stopProfile = sync.OnceFunc(pprof.StopCPUProfile)
		defer stopProfile()
	}
	rt0, cpu0 := profile.ReadRuntime(), selfCPU()
	t0 := since()
	emit(Event{Kind: "syncing"})
	var caches []Cache
	stopCaches := func() {
		for _, c := range caches {
			c.Stop()
		}
		caches = nil
	}
	defer func() { stopCaches() }()
	for _, r := range spec.Resources {
		c, err := spec.Mode.startCache(ctx, Env{
			Config: cfg, Namespace: r.Namespace, Resource: r.GroupVersionResource, Handler: &h, Streaming: spec.Mode.Streaming,
		})
		if err != nil {
			return res, fmt.Errorf("start mode %s for %s: %w", spec.Mode.Name, r.Resource, err)
		}
		caches = append(caches, c)
	}
	c := joined(caches)
	mark(t0, "start")

	if err := waitFor(ctx, plan.SyncTimeout.D(), c.HasSynced); err != nil {
		return res, fmt.Errorf("sync %s of %s: %w", res.Resource, spec.Mode.Name, err)
	}
	tSync := since()
	stopProfile()
	res.SyncSeconds = (tSync - t0).Seconds()
	res.SyncBytes = traffic.bytes.Load()
	res.Objects = c.Len()
	mark(tSync, "synced")
	emit(Event{Kind: "synced", Objects: res.Objects, Seconds: res.SyncSeconds})
	if err := sleep(ctx, plan.Settle.D()); err != nil {
		return res, err
	}
	tInitEnd, rtInitEnd, cpuInitEnd := since(), profile.ReadRuntime(), selfCPU()
	runtime.GC()
	res.LiveHeap = heapObjects()
	res.LiveRSS = openStatm().readAndClose()
	if res.Objects > 0 && res.LiveHeap > res.BaselineHeap {
		res.BytesPerObject = float64(res.LiveHeap-res.BaselineHeap) / float64(res.Objects)
	}

	tIdle0, rtIdle0, cpuIdle0 := since(), profile.ReadRuntime(), selfCPU()
	if err := sleep(ctx, plan.Idle.D()); err != nil {
		return res, err
	}
	tIdle1, rtIdle1, cpuIdle1 := since(), profile.ReadRuntime(), selfCPU()

	var listed *listTimes
	if c.ReconcileList != nil {
		l, tm := measureReconcileList(ctx, c, since)
		res.ReconcileList, listed = &l, &tm
		mark(tm.t0, "reconcile list")
		peak, _ := sampler.Peak(tm.t0, tm.t1)
		emit(Event{Kind: "listed", Objects: l.Objects, Seconds: l.Seconds, AllocatedBytes: l.AllocatedBytes,
			PeakRatio: ratio(max(peak, l.HeldHeap), res.LiveHeap), Error: l.Error})
	}

	type relistTimes struct {
		t0, t1     time.Duration
		rt0, rt1   profile.RuntimeSnapshot
		cpu0, cpu1 time.Duration
	}
	times := make([]relistTimes, plan.Relists)
	for k := 1; k <= plan.Relists; k++ {
		rl := Relist{Index: k, Churn: plan.ChurnAt(k)}
		n0 := c.Len()
		base := h.events()
		lists0 := 0
		if c.Lists != nil {
			lists0 = c.Lists()
		}
		// The re-list the 410 sets off waits in this process's transport
		// until the parent has written the changes.
		traffic.hold()
		traffic.markList()
		tGone := since()
		mark(tGone, fmt.Sprintf("410 #%d", k))
		emit(Event{Kind: "relist", Index: k})
		answer, err := spec.Relist(ctx, k)
		rl.WatchesEnded, rl.Changes = answer.Ended, answer.Changes
		bytes0 := traffic.bytes.Load()
		rtK0, cpuK0, tK0 := profile.ReadRuntime(), selfCPU(), since()
		traffic.release()
		if tK0-tGone > 200*time.Millisecond {
			mark(tK0, fmt.Sprintf("list #%d", k))
		}
		ch := answer.Changes
		if err == nil {
			err = waitFor(ctx, plan.RelistTimeout.D(), func() bool {
				got := h.events().sub(base)
				switch {
				case c.Lists != nil:
					return c.Lists() >= lists0+len(caches)
				case n0 == 0 && ch.Created == 0: // nothing to deliver: a new list request is the sign
					return traffic.firstList.Load() != 0
				}
				// client-go delivers an update for every object it keeps, an
				// add for every new one, a delete for every one gone.
				return got.Adds+got.Updates >= n0-ch.Deleted+ch.Created && got.Deletes >= ch.Deleted
			})
		}
		if err == nil && c.Lists != nil {
			// The library reported the list; its handlers may still be
			// receiving the changes it found.
			// A shortfall after deliverWait is reported below, as Missed.
			_ = waitFor(ctx, deliverWait, func() bool {
				got := h.events().sub(base)
				return got.Adds >= ch.Created && got.Updates >= ch.Updated && got.Deletes >= ch.Deleted
			})
		}
		tDone := since()
		// From the first list request after the 410 (a held one counts from
		// its release).
		if listAt := time.Duration(traffic.firstList.Load()); listAt > tK0 {
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
		tK1, rtK1, cpuK1 := since(), profile.ReadRuntime(), selfCPU()
		rl.Delivered = h.events().sub(base)
		rl.Updates = rl.Delivered.Adds + rl.Delivered.Updates
		if err == nil && rl.Missed() > 0 {
			rl.Error = fmt.Sprintf("delivered %d adds, %d updates and %d deletes for %d objects created, %d updated and %d deleted",
				rl.Delivered.Adds, rl.Delivered.Updates, rl.Delivered.Deletes, ch.Created, ch.Updated, ch.Deleted)
		}
		rl.BytesReceived = traffic.bytes.Load() - bytes0
		runtime.GC()
		rl.LiveHeapAfter = heapObjects()
		times[k-1] = relistTimes{tK0, tK1, rtK0, rtK1, cpuK0, cpuK1}
		res.Relists = append(res.Relists, rl)
		peak, _ := sampler.Peak(tK0, tK1)
		emit(Event{Kind: "relisted", Index: k, Seconds: rl.Seconds, PeakRatio: ratio(peak, res.LiveHeap), Changes: &rl.Changes,
			Delivered: &rl.Delivered, Error: rl.Error})
		if err != nil && ctx.Err() != nil {
			return res, err
		}
	}
	tEnd, rtEnd, cpuEnd := since(), profile.ReadRuntime(), selfCPU()
	res.BytesReceived = traffic.bytes.Load()
	res.ListPath.Client = traffic.requests()
	res.ListPath.Library = "unknown"
	if c.ListPath != nil {
		if p := c.ListPath(); p != "" {
			res.ListPath.Library = p
		}
	}
	stopCaches()
	stopSampling()

	// Everything below reads what the sampler and the probe recorded; it runs
	// after the measurement so that its own allocations are not measured.
	window := func(from, to time.Duration, rtFrom, rtTo profile.RuntimeSnapshot, cpuFrom, cpuTo time.Duration) Window {
		peakHeap, peakRSS := sampler.Peak(from, to)
		return Window{
			StartSeconds: from.Seconds(), EndSeconds: to.Seconds(),
			PeakHeap: peakHeap, PeakRSS: peakRSS, PeakRatio: ratio(peakHeap, res.LiveHeap),
			CPUSeconds: (cpuTo - cpuFrom).Seconds(),
			Probe:      probe.Window(from, to),
			Runtime:    runtimeStats(rtFrom, rtTo),
		}
	}
	res.InitialSync = window(t0, tInitEnd, rt0, rtInitEnd, cpu0, cpuInitEnd)
	res.Idle = window(tIdle0, tIdle1, rtIdle0, rtIdle1, cpuIdle0, cpuIdle1)
	if listed != nil {
		w := window(listed.t0, listed.t1, listed.rt0, listed.rt1, listed.cpu0, listed.cpu1)
		w.PeakHeap = max(w.PeakHeap, res.ReconcileList.HeldHeap)
		w.PeakRatio = ratio(w.PeakHeap, res.LiveHeap)
		res.ReconcileList.Window = w
	}
	for i, tm := range times {
		res.Relists[i].Window = window(tm.t0, tm.t1, tm.rt0, tm.rt1, tm.cpu0, tm.cpu1)
	}
	res.Whole = window(t0, tEnd, rt0, rtEnd, cpu0, cpuEnd)
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
