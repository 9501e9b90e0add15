package bench

import (
	"context"
	"os"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// MemSample is one reading of the process's memory.
type MemSample struct {
	// T is the time since the measurement started.
	T time.Duration `json:"t"`
	// Heap is runtime/metrics /memory/classes/heap/objects:bytes: live objects
	// plus those dead but not yet swept. Its peak is the spike a container's
	// memory limit has to absorb.
	Heap uint64 `json:"heap"`
	// RSS is the resident set size from /proc/self/statm (0 where unavailable).
	RSS uint64 `json:"rss"`
}

// chunkLen is the number of samples in one chunk of a series: appending never
// copies what is already recorded, and a new chunk is a small allocation.
const chunkLen = 4096

// series is an append-only list of samples safe for one writer and many
// readers. Its chunks are mapped outside the Go heap when T holds no pointers
// (offHeap), so that recording does not grow the heap being measured; release
// unmaps them.
type series[T any] struct {
	mu     sync.Mutex
	chunks [][]T
	mapped []bool // per chunk: from offHeap, to be unmapped
}

func (s *series[T]) add(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.chunks)
	if n == 0 || len(s.chunks[n-1]) == chunkLen {
		c, err := offHeap[T](chunkLen)
		s.mapped = append(s.mapped, err == nil)
		if err != nil { // a type with pointers, or no mapping: on the heap
			c = make([]T, chunkLen)
		}
		s.chunks = append(s.chunks, c[:0])
		n++
	}
	s.chunks[n-1] = append(s.chunks[n-1], v)
}

// each calls f for every sample in order, until f returns false.
func (s *series[T]) each(f func(T) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.chunks {
		for _, v := range c {
			if !f(v) {
				return
			}
		}
	}
}

func (s *series[T]) all() []T {
	var out []T
	s.each(func(v T) bool { out = append(out, v); return true })
	return out
}

// release frees the chunks; the series is then empty.
func (s *series[T]) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.chunks {
		if s.mapped[i] {
			_ = freeOffHeap(c) // an unmap fails only for a slice offHeap did not return
		}
	}
	s.chunks, s.mapped = nil, nil
}

// Sampler reads the heap and the RSS at a fixed interval, so that peaks inside
// a window can be found afterwards. Reading runtime/metrics does not stop the
// world, and a sample costs a few microseconds (BenchmarkSample), so sampling
// every 2 ms takes well under 1 % of a CPU; its samples are kept outside the
// Go heap (series), so sampling does not grow what it measures. The interval
// is what the sampler asks for: when the process's CPUs are busy (a list
// decoding, the garbage collector marking) its goroutine wakes late, and
// Gaps reports the longest interval actually seen.
type Sampler struct {
	start    time.Time
	interval atomic.Int64 // time.Duration; SetInterval changes it
	changed  chan struct{}
	samples  series[MemSample]
	done     chan struct{}
	wg       sync.WaitGroup
}

// StartSampler starts sampling every interval, with times measured from start,
// until ctx ends or Stop is called.
func StartSampler(ctx context.Context, start time.Time, interval time.Duration) *Sampler {
	s := &Sampler{start: start, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	s.interval.Store(int64(interval))
	s.wg.Go(func() { s.loop(ctx) })
	return s
}

// SetInterval changes the sampling interval at once: the next sample is one
// new interval after the change.
func (s *Sampler) SetInterval(d time.Duration) {
	s.interval.Store(int64(d))
	signal(s.changed)
}

// signal wakes the loop waiting on c, once however often it is called.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *Sampler) loop(ctx context.Context) {
	r := newMemReader()
	defer r.close()
	t := time.NewTicker(time.Duration(s.interval.Load()))
	defer t.Stop()
	for {
		s.samples.add(r.read(s.start))
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-s.changed:
			t.Reset(time.Duration(s.interval.Load()))
		case <-t.C:
		}
	}
}

// memReader takes one MemSample without allocating.
type memReader struct {
	heap []metrics.Sample
	rss  *statm
}

func newMemReader() *memReader {
	return &memReader{heap: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}, rss: openStatm()}
}

func (r *memReader) read(start time.Time) MemSample {
	metrics.Read(r.heap)
	var h uint64
	if r.heap[0].Value.Kind() == metrics.KindUint64 {
		h = r.heap[0].Value.Uint64()
	}
	return MemSample{T: time.Since(start), Heap: h, RSS: r.rss.read()}
}

func (r *memReader) close() {
	if r.rss != nil {
		_ = r.rss.Close()
	}
}

// Stop stops sampling and waits for the sampler to end. It is safe to call once.
func (s *Sampler) Stop() {
	close(s.done)
	s.wg.Wait()
}

// Release frees the samples, after Stop; the sampler has none afterwards. A
// sampler never released keeps them until the process ends.
func (s *Sampler) Release() { s.samples.release() }

// Samples returns every sample so far.
func (s *Sampler) Samples() []MemSample { return s.samples.all() }

// Peak returns the highest heap and the highest RSS sampled in [from, to].
func (s *Sampler) Peak(from, to time.Duration) (heap, rss uint64) {
	s.samples.each(func(m MemSample) bool {
		if m.T > to {
			return false
		}
		if m.T >= from {
			heap, rss = max(heap, m.Heap), max(rss, m.RSS)
		}
		return true
	})
	return heap, rss
}

// Gaps returns the number of samples in [from, to] and the longest time
// between two consecutive samples there (the edges of the window count as
// samples): how finely the window was really sampled.
func (s *Sampler) Gaps(from, to time.Duration) Sampling {
	var n int
	var longest time.Duration
	last := from
	s.samples.each(func(m MemSample) bool {
		if m.T > to {
			return false
		}
		if m.T >= from {
			n++
			longest = max(longest, m.T-last)
			last = m.T
		}
		return true
	})
	if to > from {
		longest = max(longest, to-last)
	}
	return Sampling{Samples: n, LongestGapMs: ms(longest)}
}

// Sampling says how finely a window's heap was sampled.
type Sampling struct {
	Samples int `json:"samples"`
	// LongestGapMs is the longest time between two samples in the window, in
	// ms: a peak shorter than that may have been missed.
	LongestGapMs float64 `json:"longestGapMs"`
}

// statm reads the resident set size from /proc/self/statm. VmHWM in
// /proc/self/status cannot be reset between windows, so the RSS peak of a window
// comes from sampling the current value instead.
type statm struct {
	f    *os.File
	buf  []byte
	page uint64
}

func openStatm() *statm {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return nil
	}
	return &statm{f: f, buf: make([]byte, 128), page: uint64(os.Getpagesize())}
}

// read returns the RSS in bytes, or 0 when it cannot be read.
func (s *statm) read() uint64 {
	if s == nil {
		return 0
	}
	n, _ := s.f.ReadAt(s.buf, 0) // procfs regenerates the file on a read at offset 0
	pages, ok := parseStatmRSS(s.buf[:n])
	if !ok {
		return 0
	}
	return pages * s.page
}

func (s *statm) Close() error { return s.f.Close() }

// parseStatmRSS returns the second field of /proc/self/statm: resident pages.
// It parses bytes in place: the sampler runs every few milliseconds and should
// not add garbage of its own.
func parseStatmRSS(line []byte) (uint64, bool) {
	i := 0
	for i < len(line) && line[i] != ' ' { // skip the first field (size)
		i++
	}
	for i < len(line) && line[i] == ' ' {
		i++
	}
	var v uint64
	digits := 0
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		v = v*10 + uint64(line[i]-'0')
		digits++
	}
	return v, digits > 0
}
