package encstore_test

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time the process has used, user and system: on a
// machine shared with other work, a benchmark's CPU time per op is a steadier
// figure of its cost than wall time, and it includes the garbage collector's
// work, which reads that allocate cause.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter reports the process CPU time per op of a benchmark loop.
type cpuMeter struct{ start time.Duration }

func startCPU() cpuMeter { return cpuMeter{processCPU()} }

func (m cpuMeter) report(b *testing.B, ops int) {
	if ops > 0 {
		b.ReportMetric(float64((processCPU()-m.start).Nanoseconds())/float64(ops), "cpu-ns/op")
	}
}
