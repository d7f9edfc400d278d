// Package procstat reads what a benchmark report needs from /proc: the
// machine (cores, CPU model, kernel, memory), whole-machine CPU use, and CPU
// time and memory of given processes. It reads through an fs.FS rooted at
// /proc so tests can feed it fixtures.
package procstat

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Proc is the live /proc.
func Proc() fs.FS { return os.DirFS("/proc") }

// Machine describes the box a benchmark ran on.
type Machine struct {
	Cores      int    `json:"cores"`
	CPUModel   string `json:"cpu_model"`
	Kernel     string `json:"kernel"`
	MemTotalMB int64  `json:"mem_total_mb"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
}

// ReadMachine reads the machine facts; what it cannot read stays empty.
func ReadMachine(proc fs.FS) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if b, err := fs.ReadFile(proc, "sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := fs.ReadFile(proc, "cpuinfo"); err == nil {
		processors := 0
		for line := range strings.Lines(string(b)) {
			key, value, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(key) {
			case "processor":
				processors++
			case "model name":
				if m.CPUModel == "" {
					m.CPUModel = strings.TrimSpace(value)
				}
			}
		}
		if processors > 0 {
			m.Cores = processors
		}
	}
	if kb, err := statusField(proc, "meminfo", "MemTotal"); err == nil {
		m.MemTotalMB = kb / 1024
	}
	return m
}

// CPUTimes are the whole machine's CPU counters in clock ticks.
type CPUTimes struct {
	Busy, Total uint64
}

// ReadCPUTimes reads the aggregate "cpu" line of /proc/stat.
func ReadCPUTimes(proc fs.FS) (CPUTimes, error) {
	b, err := fs.ReadFile(proc, "stat")
	if err != nil {
		return CPUTimes{}, fmt.Errorf("procstat: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return CPUTimes{}, fmt.Errorf("procstat: /proc/stat: unexpected first line %q", line)
	}
	var t CPUTimes
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("procstat: /proc/stat field %d: %w", i+1, err)
		}
		// guest and guest_nice (fields 9, 10) are already inside user and nice.
		if i >= 8 {
			break
		}
		t.Total += v
		if i != 3 && i != 4 { // idle, iowait
			t.Busy += v
		}
	}
	return t, nil
}

// Utilization is the busy share of all cores between two readings, 0–1.
func Utilization(start, end CPUTimes) float64 {
	if end.Total <= start.Total {
		return 0
	}
	return float64(end.Busy-start.Busy) / float64(end.Total-start.Total)
}

// Sample is one reading of a process.
type Sample struct {
	CPU       time.Duration // user + system time so far
	RSSKB     int64
	PeakRSSKB int64 // VmHWM
}

// ReadProcess reads /proc/<pid>/stat and /proc/<pid>/status; ticks is the
// kernel's clock-tick rate (see ClockTicks).
func ReadProcess(proc fs.FS, pid int, ticks int64) (Sample, error) {
	dir := strconv.Itoa(pid)
	b, err := fs.ReadFile(proc, dir+"/stat")
	if err != nil {
		return Sample{}, fmt.Errorf("procstat: pid %d: %w", pid, err)
	}
	// The command name may hold spaces and parentheses: fields start after the
	// last ')'. Field 3 (state) is then index 0, utime (14) index 11.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Sample{}, fmt.Errorf("procstat: pid %d: malformed stat", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 13 {
		return Sample{}, fmt.Errorf("procstat: pid %d: stat has %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Sample{}, fmt.Errorf("procstat: pid %d: cpu times: %w", pid, err)
	}
	s := Sample{CPU: time.Duration(utime+stime) * time.Second / time.Duration(ticks)}
	if s.RSSKB, err = statusField(proc, dir+"/status", "VmRSS"); err != nil {
		return Sample{}, fmt.Errorf("procstat: pid %d: %w", pid, err)
	}
	if s.PeakRSSKB, err = statusField(proc, dir+"/status", "VmHWM"); err != nil {
		return Sample{}, fmt.Errorf("procstat: pid %d: %w", pid, err)
	}
	return s, nil
}

// statusField reads a "Key:   123 kB" line of a /proc status-style file.
func statusField(proc fs.FS, name, key string) (int64, error) {
	f, err := proc.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		num, _, _ := strings.Cut(strings.TrimSpace(v), " ")
		return strconv.ParseInt(num, 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s", name, key)
}

// atClkTck is the auxv key of the clock-tick rate.
const atClkTck = 17

// ClockTicks returns the kernel's USER_HZ from the auxiliary vector (what
// sysconf(_SC_CLK_TCK) reads), or 100, its value on every common Linux.
func ClockTicks(proc fs.FS) int64 {
	b, err := fs.ReadFile(proc, "self/auxv")
	if err != nil {
		return 100
	}
	for ; len(b) >= 16; b = b[16:] {
		key, val := binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint64(b[8:])
		if key == atClkTck && val > 0 {
			return int64(val)
		}
	}
	return 100
}

// Target is a process to watch, by the name the report shows.
type Target struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

// ParseTargets parses "imd=123,mariadbd=456".
func ParseTargets(s string) ([]Target, error) {
	var out []Target
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, pidText, ok := strings.Cut(item, "=")
		pid, err := strconv.Atoi(pidText)
		if !ok || name == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("procstat: %q: want name=pid", item)
		}
		out = append(out, Target{Name: name, PID: pid})
	}
	return out, nil
}
