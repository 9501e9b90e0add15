package bench

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServerCost is what the local API server (kube-apiserver with its etcd, one
// process) spent during a window of a measurement: the cost each list path puts
// on the server rather than on the client.
type ServerCost struct {
	// CPUSeconds is the server process's CPU time (user and system) in the
	// window, from /proc/<pid>/stat, to about 20 ms at each edge.
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSS is the highest resident set size sampled in the window; StartRSS
	// the first, so that growth can be told from what the server held already.
	PeakRSS  uint64 `json:"peakRSSBytes"`
	StartRSS uint64 `json:"startRSSBytes"`
	// Storage is what the server read to answer the window's lists, from its
	// metrics; nil when they could not be read.
	Storage *StorageCounts `json:"storage,omitempty"`
}

// StorageCounts are the API server's storage counters for the measured
// resources: where their lists were served from and how many objects that
// read. They come from the server's /metrics (etcd_requests_total,
// apiserver_storage_list_* and apiserver_init_events_total), read before and
// after a window.
type StorageCounts struct {
	// EtcdLists is the number of list requests the server sent to etcd
	// (operations list, listWithCount, listStream, listOnlyKeys).
	EtcdLists float64 `json:"etcdLists"`
	// EtcdObjects is the number of objects those lists read from etcd.
	EtcdObjects float64 `json:"etcdObjects"`
	// CacheLists and CacheObjects are the same for lists served from the
	// server's watch cache.
	CacheLists   float64 `json:"cacheLists"`
	CacheObjects float64 `json:"cacheObjects"`
	// StreamObjects is the number of objects the watch cache sent as the
	// initial events of streaming lists (and of watches from an old
	// resourceVersion).
	StreamObjects float64 `json:"streamObjects"`
}

// sub returns c - o.
func (c StorageCounts) sub(o StorageCounts) StorageCounts {
	return StorageCounts{
		EtcdLists: c.EtcdLists - o.EtcdLists, EtcdObjects: c.EtcdObjects - o.EtcdObjects,
		CacheLists: c.CacheLists - o.CacheLists, CacheObjects: c.CacheObjects - o.CacheObjects,
		StreamObjects: c.StreamObjects - o.StreamObjects,
	}
}

// ParseStorageCounts reads the counters of the given resources from the
// Prometheus text an API server serves on /metrics.
func ParseStorageCounts(r io.Reader, resources []schema.GroupResource) (StorageCounts, error) {
	var c StorageCounts
	want := func(labels map[string]string) bool {
		for _, gr := range resources {
			if labels["resource"] == gr.Resource && labels["group"] == gr.Group {
				return true
			}
		}
		return false
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var name string
		switch {
		case bytes.HasPrefix(line, []byte("etcd_requests_total{")):
			name = "etcd"
		case bytes.HasPrefix(line, []byte("apiserver_storage_list_total{")):
			name = "lists"
		case bytes.HasPrefix(line, []byte("apiserver_storage_list_fetched_objects_total{")):
			name = "objects"
		case bytes.HasPrefix(line, []byte("apiserver_init_events_total{")):
			name = "init"
		default:
			continue
		}
		labels, value, ok := parseSample(line)
		if !ok || !want(labels) {
			continue
		}
		switch name {
		case "etcd":
			if strings.HasPrefix(labels["operation"], "list") {
				c.EtcdLists += value
			}
		case "lists":
			if labels["storage"] == "etcd" {
				// etcd_requests_total counts these too.
				continue
			}
			c.CacheLists += value
		case "objects":
			if labels["storage"] == "etcd" {
				c.EtcdObjects += value
			} else {
				c.CacheObjects += value
			}
		case "init":
			c.StreamObjects += value
		}
	}
	return c, sc.Err()
}

// parseSample parses `name{a="x",b="y"} 12` (label values without escapes, as
// the counters read here have).
func parseSample(line []byte) (map[string]string, float64, bool) {
	open, end := bytes.IndexByte(line, '{'), bytes.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return nil, 0, false
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(string(line[open+1:end]), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		labels[k] = strings.Trim(v, `"`)
	}
	fields := strings.Fields(string(line[end+1:]))
	if len(fields) == 0 {
		return nil, 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return labels, v, err == nil
}

// serverSample is one reading of the server process.
type serverSample struct {
	at  time.Time
	cpu time.Duration
	rss uint64
}

// serverSampler reads the server process's CPU time and RSS at a fixed
// interval while a child measures, so that the cost of each of the child's
// windows can be read afterwards from wall-clock times.
type serverSampler struct {
	samples series[serverSample]
	done    chan struct{}
	wg      sync.WaitGroup
}

// serverSampleEvery is the server's sampling interval: the CPU times in /proc
// tick every 10 ms, and RSS moves slower than that.
const serverSampleEvery = 20 * time.Millisecond

func startServerSampler(ctx context.Context, pid int) (*serverSampler, error) {
	p, err := openProc(pid)
	if err != nil {
		return nil, err
	}
	s := &serverSampler{done: make(chan struct{})}
	s.wg.Go(func() {
		defer func() { _ = p.Close() }()
		t := time.NewTicker(serverSampleEvery)
		defer t.Stop()
		for {
			if cpu, rss, err := p.read(); err == nil {
				s.samples.add(serverSample{at: time.Now(), cpu: cpu, rss: rss})
			}
			select {
			case <-ctx.Done():
				return
			case <-s.done:
				return
			case <-t.C:
			}
		}
	})
	return s, nil
}

func (s *serverSampler) stop() {
	close(s.done)
	s.wg.Wait()
}

// cost returns the CPU time between the last sample at or before from and the
// first at or after to, and the RSS over the samples in between.
func (s *serverSampler) cost(from, to time.Time) ServerCost {
	var first, last *serverSample
	var c ServerCost
	s.samples.each(func(m serverSample) bool {
		if !m.at.After(from) || first == nil {
			first = &m
		}
		if !m.at.Before(from) && !m.at.After(to) {
			if c.StartRSS == 0 {
				c.StartRSS = m.rss
			}
			c.PeakRSS = max(c.PeakRSS, m.rss)
		}
		last = &m
		return m.at.Before(to)
	})
	if first != nil && last != nil {
		c.CPUSeconds = max(0, (last.cpu - first.cpu).Seconds())
	}
	return c
}
