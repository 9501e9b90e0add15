package bench

import (
	"context"
	"errors"
	"fmt"
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
	// Write, when set, is the parent's side of the events phase
	// (Plan.Events): for step 0 it creates the writer's Pods, for step k it
	// writes at the plan's k-th rate and returns what it wrote.
	Write func(ctx context.Context, step int) (EventsAnswer, error)
	// CPUProfile, when set, is a file to write a CPU profile of the initial
	// sync to (from the informers' start to HasSynced); with an events phase,
	// its steps go to a second file beside it (.events.pprof for .sync.pprof).
	CPUProfile string
	// AllocProfile, when set, is a file to write an allocation profile of
	// the initial sync window to (from the informers' start to the settle
	// after HasSynced): what the sync allocated. Sampling allocations finely
	// costs CPU: the window's CPU figures are then not comparable with a
	// run's without it.
	AllocProfile string
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
	// (started), "relisted", "events" (the events phase's Pods are cached)
	// or "eventstep" (a step of it done).
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
	// Step is an events phase's step, done.
	Step *EventStep `json:"step,omitempty"`
	// Error is set on a re-list that failed.
	Error string `json:"error,omitempty"`
}

// handlerCounts counts the events the informer delivers; a forced re-list is
// complete when it has delivered an update for every object it had. During
// the events phase it also hands each event to the phase's recorder.
type handlerCounts struct {
	adds, updates, deletes atomic.Int64
	rec                    atomic.Pointer[eventRecorder]
}

func (h *handlerCounts) OnAdd(obj any, _ bool) {
	h.adds.Add(1)
	if r := h.rec.Load(); r != nil {
		r.saw(obj, false)
	}
}

func (h *handlerCounts) OnUpdate(_, obj any) {
	h.updates.Add(1)
	if r := h.rec.Load(); r != nil {
		r.saw(obj, false)
	}
}

func (h *handlerCounts) OnDelete(obj any) {
	h.deletes.Add(1)
	if r := h.rec.Load(); r != nil {
		r.saw(obj, true)
	}
}

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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	m := &measurement{spec: spec, plan: plan, res: &res, start: time.Now()}
	res.Started = m.start
	m.traffic = newTraffic(m.start, names...)
	defer m.traffic.release()
	cfg := m.traffic.instrument(spec.Config)

	runtime.GC()
	res.BaselineHeap = heapObjects()
	m.sampler = StartSampler(ctx, m.start, plan.SampleEvery.D())
	m.probe = StartProbe(ctx, m.start, plan.ProbeEvery.D())
	defer m.releaseSamples()
	defer m.stopSampling()
	defer func() { m.stopCaches() }()

	initial, err := m.sync(ctx, cfg)
	if err != nil {
		return res, err
	}
	idle := listTimes{t0: m.since(), rt0: profile.ReadRuntime(), cpu0: selfCPU()}
	if err := sleep(ctx, plan.Idle.D()); err != nil {
		return res, err
	}
	idle.t1, idle.rt1, idle.cpu1 = m.since(), profile.ReadRuntime(), selfCPU()
	listed := m.reconcileList(ctx)

	times := make([]listTimes, plan.Relists)
	for k := 1; k <= plan.Relists; k++ {
		if times[k-1], err = m.relist(ctx, k); err != nil {
			return res, err
		}
	}
	if plan.Events != nil {
		if err := m.events(ctx); err != nil {
			return res, err
		}
	}
	whole := listTimes{t0: initial.t0, rt0: initial.rt0, cpu0: initial.cpu0, forced0: initial.forced0}
	whole.t1, whole.rt1, whole.cpu1, whole.forced1 = m.since(), profile.ReadRuntime(), selfCPU(), m.forcedGCs()
	res.BytesReceived = m.traffic.bytes.Load()
	res.ListPath.Client = m.traffic.requests()
	res.ListPath.Library = "unknown"
	if m.c.HeapBound != nil {
		_, res.HeapBoundOff = m.c.HeapBound()
	}
	if m.c.ListPath != nil {
		if p := m.c.ListPath(); p != "" {
			res.ListPath.Library = p
		}
	}
	m.stopCaches()
	m.stopSampling()
	m.windows(initial, idle, listed, times, whole)
	return res, nil
}

// measurement is one Measure in progress: what its steps share.
type measurement struct {
	spec    MeasureSpec
	plan    Plan
	res     *Result
	start   time.Time
	traffic *traffic
	sampler *Sampler
	probe   *Probe
	h       handlerCounts
	markers []Marker
	caches  []Cache
	c       Cache // the caches joined
	// eventTimes are the events phase's windows, once it ran.
	eventTimes *eventsTimes

	samplingStopped bool
}

func (m *measurement) since() time.Duration { return time.Since(m.start) }

func (m *measurement) mark(t time.Duration, label string) {
	m.markers = append(m.markers, Marker{Seconds: t.Seconds(), Label: label})
}

func (m *measurement) emit(e Event) {
	if m.spec.Events != nil {
		m.spec.Events(e)
	}
}

func (m *measurement) stopSampling() {
	if !m.samplingStopped {
		m.samplingStopped = true
		m.sampler.Stop()
		m.probe.Stop()
	}
}

// releaseSamples frees the sampler's and the probe's records, once the
// windows have been read from them.
func (m *measurement) releaseSamples() {
	m.sampler.Release()
	m.probe.Release()
}

// forcedGCs is the number of collections the caches have forced so far (0
// for a library that does not say).
func (m *measurement) forcedGCs() int {
	if m.c.HeapBound == nil {
		return 0
	}
	n, _ := m.c.HeapBound()
	return n
}

func (m *measurement) stopCaches() {
	for _, c := range m.caches {
		c.Stop()
	}
	m.caches = nil
}

// startCPUProfile starts a CPU profile written to path ("" for none) and
// returns the function that stops it, which may be called more than once.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start a CPU profile: %w", err)
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		_ = f.Close() // a profile that fails to close loses only itself
	}), nil
}

// sync starts the caches and waits for them to sync (under a CPU profile when
// asked), lets them settle and reads the live heap: the initial-sync window.
func (m *measurement) sync(ctx context.Context, cfg *rest.Config) (listTimes, error) {
	res, plan := m.res, m.plan
	var w listTimes
	stopProfile, err := startCPUProfile(m.spec.CPUProfile)
	if err != nil {
		return w, err
	}
	defer stopProfile()
	allocs, err := startAllocProfile(m.spec.AllocProfile)
	if err != nil {
		return w, err
	}
	defer allocs.restore()
	w.rt0, w.cpu0 = profile.ReadRuntime(), selfCPU()
	w.t0 = m.since()
	m.emit(Event{Kind: "syncing"})
	// No cache runs yet: its forced collections count from 0.
	for _, r := range m.spec.Resources {
		c, err := m.spec.Mode.startCache(ctx, Env{
			Config: cfg, Namespace: r.Namespace, Resource: r.GroupVersionResource, Handler: &m.h, Streaming: m.spec.Mode.Streaming,
		})
		if err != nil {
			return w, fmt.Errorf("start mode %s for %s: %w", m.spec.Mode.Name, r.Resource, err)
		}
		m.caches = append(m.caches, c)
	}
	m.c = joined(m.caches)
	m.mark(w.t0, "start")

	if err := waitFor(ctx, plan.SyncTimeout.D(), m.c.HasSynced); err != nil {
		return w, fmt.Errorf("sync %s of %s: %w", res.Resource, m.spec.Mode.Name, err)
	}
	tSync := m.since()
	stopProfile()
	res.SyncSeconds = (tSync - w.t0).Seconds()
	res.SyncBytes = m.traffic.bytes.Load()
	res.Objects = m.c.Len()
	m.mark(tSync, "synced")
	m.emit(Event{Kind: "synced", Objects: res.Objects, Seconds: res.SyncSeconds})
	if err := sleep(ctx, plan.Settle.D()); err != nil {
		return w, err
	}
	w.t1, w.rt1, w.cpu1, w.forced1 = m.since(), profile.ReadRuntime(), selfCPU(), m.forcedGCs()
	runtime.GC()
	res.LiveHeap = heapObjects()
	res.LiveRSS = openStatm().readAndClose()
	if err := allocs.write(); err != nil {
		return w, err
	}
	if res.Objects > 0 && res.LiveHeap > res.BaselineHeap {
		res.BytesPerObject = float64(res.LiveHeap-res.BaselineHeap) / float64(res.Objects)
	}
	return w, nil
}

// reconcileList reads every cached object once, when the mode has a reader,
// and returns the window of the read (nil without a reader).
func (m *measurement) reconcileList(ctx context.Context) *listTimes {
	if m.c.ReconcileList == nil {
		return nil
	}
	l, tm := measureReconcileList(ctx, m.c, m.since)
	m.res.ReconcileList = &l
	m.mark(tm.t0, "reconcile list")
	peak, _ := m.sampler.Peak(tm.t0, tm.t1)
	m.emit(Event{Kind: "listed", Objects: l.Objects, Seconds: l.Seconds, AllocatedBytes: l.AllocatedBytes,
		PeakRatio: ratio(max(peak, l.HeldHeap), m.res.LiveHeap), Error: l.Error})
	return &tm
}

// relist forces re-list k, waits for it to complete, lets it settle and
// records it in the result; it returns the re-list's window. A re-list that
// fails is recorded; the error returned ends the measurement (ctx ended).
func (m *measurement) relist(ctx context.Context, k int) (listTimes, error) {
	var w listTimes
	rl := Relist{Index: k, Churn: m.plan.ChurnAt(k)}
	n0 := m.c.Len()
	base := m.h.events()
	lists0 := 0
	if m.c.Lists != nil {
		lists0 = m.c.Lists()
	}
	// The re-list the 410 sets off waits in this process's transport
	// until the parent has written the changes.
	m.traffic.hold()
	m.traffic.markList()
	tGone := m.since()
	m.mark(tGone, fmt.Sprintf("410 #%d", k))
	m.emit(Event{Kind: "relist", Index: k})
	answer, err := m.spec.Relist(ctx, k)
	rl.WatchesEnded, rl.Changes = answer.Ended, answer.Changes
	bytes0 := m.traffic.bytes.Load()
	w.rt0, w.cpu0, w.t0, w.forced0 = profile.ReadRuntime(), selfCPU(), m.since(), m.forcedGCs()
	m.traffic.release()
	if w.t0-tGone > 200*time.Millisecond {
		m.mark(w.t0, fmt.Sprintf("list #%d", k))
	}
	if err == nil {
		err = m.waitRelisted(ctx, base, n0, lists0, answer.Changes)
	}
	tDone := m.since()
	// From the first list request after the 410 (a held one counts from
	// its release).
	if listAt := time.Duration(m.traffic.firstList.Load()); listAt > w.t0 {
		rl.Seconds = (tDone - listAt).Seconds()
	} else {
		rl.Seconds = (tDone - w.t0).Seconds()
	}
	if err != nil {
		rl.Error = err.Error()
	} else {
		m.mark(tDone, fmt.Sprintf("re-list #%d done", k))
	}
	if serr := sleep(ctx, m.plan.Settle.D()); serr != nil {
		return w, serr
	}
	w.t1, w.rt1, w.cpu1, w.forced1 = m.since(), profile.ReadRuntime(), selfCPU(), m.forcedGCs()
	m.recordRelist(&rl, base, bytes0, err == nil)
	peak, _ := m.sampler.Peak(w.t0, w.t1)
	m.emit(Event{Kind: "relisted", Index: k, Seconds: rl.Seconds, PeakRatio: ratio(peak, m.res.LiveHeap), Changes: &rl.Changes,
		Delivered: &rl.Delivered, Error: rl.Error})
	if err != nil && ctx.Err() != nil {
		return w, err
	}
	return w, nil
}

// waitRelisted waits until a re-list is complete: the library reported one
// more list per cache (leanstore), or, for client-go, which delivers an update
// for every object it keeps, an add for every new one and a delete for every
// one gone, until it has. A library that reports its lists then gets
// deliverWait to deliver the changes it found.
func (m *measurement) waitRelisted(ctx context.Context, base Events, n0, lists0 int, ch dataset.Changes) error {
	c := m.c
	err := waitFor(ctx, m.plan.RelistTimeout.D(), func() bool {
		got := m.h.events().sub(base)
		switch {
		case c.Lists != nil:
			return c.Lists() >= lists0+len(m.caches)
		case n0 == 0 && ch.Created == 0: // nothing to deliver: a new list request is the sign
			return m.traffic.firstList.Load() != 0
		}
		return got.Adds+got.Updates >= n0-ch.Deleted+ch.Created && got.Deletes >= ch.Deleted
	})
	if err == nil && c.Lists != nil {
		// The library reported the list; its handlers may still be
		// receiving the changes it found.
		// A shortfall after deliverWait is reported by recordRelist, as Missed.
		_ = waitFor(ctx, deliverWait, func() bool {
			got := m.h.events().sub(base)
			return got.Adds >= ch.Created && got.Updates >= ch.Updated && got.Deletes >= ch.Deleted
		})
	}
	return err
}

// recordRelist completes rl with what was delivered and received since the
// re-list began and the live heap after it, and appends it to the result.
func (m *measurement) recordRelist(rl *Relist, base Events, bytes0 int64, completed bool) {
	ch := rl.Changes
	rl.Delivered = m.h.events().sub(base)
	rl.Updates = rl.Delivered.Adds + rl.Delivered.Updates
	if completed && rl.Missed() > 0 {
		rl.Error = fmt.Sprintf("delivered %d adds, %d updates and %d deletes for %d objects created, %d updated and %d deleted",
			rl.Delivered.Adds, rl.Delivered.Updates, rl.Delivered.Deletes, ch.Created, ch.Updated, ch.Deleted)
	}
	rl.BytesReceived = m.traffic.bytes.Load() - bytes0
	runtime.GC()
	rl.LiveHeapAfter = heapObjects()
	m.res.Relists = append(m.res.Relists, *rl)
}

// windows fills the result's windows, series and markers from what the
// sampler and the probe recorded. It runs after the measurement so that its
// own allocations are not measured.
func (m *measurement) windows(initial, idle listTimes, listed *listTimes, relists []listTimes, whole listTimes) {
	res := m.res
	window := func(tm listTimes) Window {
		peakHeap, peakRSS := m.sampler.Peak(tm.t0, tm.t1)
		return Window{
			StartSeconds: tm.t0.Seconds(), EndSeconds: tm.t1.Seconds(),
			PeakHeap: peakHeap, PeakRSS: peakRSS, PeakRatio: ratio(peakHeap, res.LiveHeap),
			CPUSeconds: (tm.cpu1 - tm.cpu0).Seconds(),
			Sampling:   m.sampler.Gaps(tm.t0, tm.t1),
			ForcedGCs:  max(0, tm.forced1-tm.forced0),
			Probe:      m.probe.Window(tm.t0, tm.t1),
			Runtime:    runtimeStats(tm.rt0, tm.rt1),
		}
	}
	res.InitialSync = window(initial)
	res.Idle = window(idle)
	if listed != nil {
		w := window(*listed)
		w.PeakHeap = max(w.PeakHeap, res.ReconcileList.HeldHeap)
		w.PeakRatio = ratio(w.PeakHeap, res.LiveHeap)
		res.ReconcileList.Window = w
	}
	for i, tm := range relists {
		res.Relists[i].Window = window(tm)
	}
	m.eventWindows(window)
	res.Whole = window(whole)
	res.Series = seriesOf(Downsample(m.sampler.Samples(), m.plan.SeriesPoints))
	res.Markers = m.markers
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
