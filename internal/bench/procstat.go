package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// selfCPU returns the CPU time this process has used, user and system, from
// getrusage: the kernel accounts it per thread to the microsecond, unlike the
// runtime's own CPU estimates, which are updated only at each GC.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: the kernel's
// USER_HZ, which Linux fixes at 100 for every architecture it exports it on.
const userHZ = 100

// procReader reads another process's CPU time and resident set size from
// /proc/<pid>/stat and /proc/<pid>/statm, keeping both files open: procfs
// regenerates a file on each read at offset 0, so sampling allocates nothing.
type procReader struct {
	stat *os.File
	buf  []byte
	rss  *statm
}

func openProc(pid int) (*procReader, error) {
	stat, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	sm, err := os.Open(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		_ = stat.Close()
		return nil, err
	}
	return &procReader{
		stat: stat, buf: make([]byte, 1024),
		rss: &statm{f: sm, buf: make([]byte, 128), page: uint64(os.Getpagesize())},
	}, nil
}

// read returns the process's CPU time (user and system) and its RSS.
func (p *procReader) read() (cpu time.Duration, rss uint64, err error) {
	n, err := p.stat.ReadAt(p.buf, 0)
	if n == 0 {
		return 0, 0, fmt.Errorf("read %s: %w", p.stat.Name(), err)
	}
	ticks, ok := parseStatCPU(p.buf[:n])
	if !ok {
		return 0, 0, fmt.Errorf("parse %s: %q", p.stat.Name(), p.buf[:min(n, 80)])
	}
	return time.Duration(ticks) * time.Second / userHZ, p.rss.read(), nil
}

func (p *procReader) Close() error {
	return errors.Join(p.stat.Close(), p.rss.Close())
}

// parseStatCPU returns utime+stime, fields 14 and 15 of /proc/<pid>/stat, in
// clock ticks. The second field, the command, is in parentheses and may hold
// spaces, so fields are counted from the last ')'.
func parseStatCPU(line []byte) (uint64, bool) {
	i := bytes.LastIndexByte(line, ')')
	if i < 0 {
		return 0, false
	}
	// After ") " come field 3 (state) onwards: utime is the 12th of them.
	fields := bytes.Fields(line[i+1:])
	if len(fields) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(string(fields[11]), 10, 64)
	s, err2 := strconv.ParseUint(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + s, true
}
