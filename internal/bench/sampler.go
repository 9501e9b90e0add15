package bench

import (
	"context"
	"os"
	"runtime/metrics"
	"sync"
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
// readers.
type series[T any] struct {
	mu     sync.Mutex
	chunks [][]T
}

func (s *series[T]) add(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.chunks)
	if n == 0 || len(s.chunks[n-1]) == chunkLen {
		s.chunks = append(s.chunks, make([]T, 0, chunkLen))
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

// Sampler reads the heap and the RSS at a fixed interval, so that peaks inside
// a window can be found afterwards. Reading runtime/metrics does not stop the
// world, so sampling every few milliseconds does not disturb what it measures.
type Sampler struct {
	start   time.Time
	samples series[MemSample]
	done    chan struct{}
	wg      sync.WaitGroup
}

// StartSampler starts sampling every interval, with times measured from start,
// until ctx ends or Stop is called.
func StartSampler(ctx context.Context, start time.Time, interval time.Duration) *Sampler {
	s := &Sampler{start: start, done: make(chan struct{})}
	s.wg.Go(func() { s.loop(ctx, interval) })
	return s
}

func (s *Sampler) loop(ctx context.Context, interval time.Duration) {
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rss := openStatm()
	if rss != nil {
		defer rss.Close()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		metrics.Read(heap)
		var h uint64
		if heap[0].Value.Kind() == metrics.KindUint64 {
			h = heap[0].Value.Uint64()
		}
		s.samples.add(MemSample{T: time.Since(s.start), Heap: h, RSS: rss.read()})
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// Stop stops sampling and waits for the sampler to end. It is safe to call once.
func (s *Sampler) Stop() {
	close(s.done)
	s.wg.Wait()
}

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
