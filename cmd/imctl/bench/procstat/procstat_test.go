package procstat

import (
	"encoding/binary"
	"os"
	"strconv"
	"testing"
	"testing/fstest"
	"time"
)

const statusFile = "Name:\timd\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n"

func procFixture(pid, utime, stime int) fstest.MapFS {
	dir := strconv.Itoa(pid)
	return fstest.MapFS{
		"sys/kernel/osrelease": {Data: []byte("6.1.0-test\n")},
		"cpuinfo": {Data: []byte("processor\t: 0\nmodel name\t: Test CPU @ 3GHz\n\n" +
			"processor\t: 1\nmodel name\t: Test CPU @ 3GHz\n")},
		"meminfo":       {Data: []byte("MemTotal:       24576000 kB\nMemFree: 1 kB\n")},
		"stat":          {Data: []byte("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n")},
		dir + "/stat":   {Data: []byte(dir + " (im d) (x) S 1 2 3 4 5 6 7 8 9 10 " + strconv.Itoa(utime) + " " + strconv.Itoa(stime) + " 0 0 20 0\n")},
		dir + "/status": {Data: []byte(statusFile)},
	}
}

func TestReadMachine(t *testing.T) {
	m := ReadMachine(procFixture(1, 0, 0))
	if m.Cores != 2 || m.CPUModel != "Test CPU @ 3GHz" || m.Kernel != "6.1.0-test" || m.MemTotalMB != 24000 || m.GoVersion == "" {
		t.Fatalf("machine = %+v", m)
	}
	if empty := ReadMachine(fstest.MapFS{}); empty.Cores == 0 || empty.Kernel != "" {
		t.Fatalf("machine without /proc = %+v", empty)
	}
}

func TestReadProcess(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		status  string
		want    Sample
		wantErr bool
	}{
		{"parenthesised name", "42 (a) b) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0\n", statusFile, Sample{CPU: 3 * time.Second, RSSKB: 102400, PeakRSSKB: 204800}, false},
		{"no closing paren", "42 (abc S 1 2", statusFile, Sample{}, true},
		{"too few fields", "42 (a) S 1 2 3\n", statusFile, Sample{}, true},
		{"bad utime", "42 (a) S 1 2 3 4 5 6 7 8 9 10 x 50 0 0\n", statusFile, Sample{}, true},
		{"no VmRSS", "42 (a) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0\n", "VmHWM: 1 kB\n", Sample{}, true},
		{"no VmHWM", "42 (a) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0\n", "VmRSS: 1 kB\n", Sample{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proc := fstest.MapFS{"42/stat": {Data: []byte(tt.stat)}, "42/status": {Data: []byte(tt.status)}}
			got, err := ReadProcess(proc, 42, 100)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ReadProcess = %+v, %v", got, err)
			}
		})
	}
	if _, err := ReadProcess(fstest.MapFS{}, 7, 100); err == nil {
		t.Fatal("missing process read fine")
	}
}

func TestCPUTimes(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    CPUTimes
		wantErr bool
	}{
		{"guest excluded", "cpu  10 1 5 80 4 0 0 0 7 7\n", CPUTimes{Busy: 16, Total: 100}, false},
		{"short", "cpu 1 2\n", CPUTimes{}, true},
		{"not cpu", "intr 1 2 3 4 5\n", CPUTimes{}, true},
		{"bad number", "cpu 1 2 x 4 5\n", CPUTimes{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCPUTimes(fstest.MapFS{"stat": {Data: []byte(tt.stat)}})
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ReadCPUTimes = %+v, %v", got, err)
			}
		})
	}
	if u := Utilization(CPUTimes{Busy: 10, Total: 100}, CPUTimes{Busy: 60, Total: 200}); u != 0.5 {
		t.Fatalf("Utilization = %v", u)
	}
	if u := Utilization(CPUTimes{Total: 100}, CPUTimes{Total: 100}); u != 0 {
		t.Fatalf("Utilization of no time = %v", u)
	}
}

func TestClockTicks(t *testing.T) {
	auxv := func(pairs ...uint64) []byte {
		var b []byte
		for _, v := range pairs {
			b = binary.NativeEndian.AppendUint64(b, v)
		}
		return b
	}
	tests := []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"found", fstest.MapFS{"self/auxv": {Data: auxv(6, 4096, atClkTck, 250, 0, 0)}}, 250},
		{"absent key", fstest.MapFS{"self/auxv": {Data: auxv(6, 4096, 0, 0)}}, 100},
		{"no file", fstest.MapFS{}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClockTicks(tt.fs); got != tt.want {
				t.Fatalf("ClockTicks = %d, want %d", got, tt.want)
			}
		})
	}
	if got := ClockTicks(Proc()); got <= 0 {
		t.Fatalf("ClockTicks of the live /proc = %d", got)
	}
}

func TestParseTargets(t *testing.T) {
	tests := []struct {
		in      string
		want    []Target
		wantErr bool
	}{
		{"", nil, false},
		{"imd=123", []Target{{"imd", 123}}, false},
		{"imd=123, mariadbd=456,redis=789,", []Target{{"imd", 123}, {"mariadbd", 456}, {"redis", 789}}, false},
		{"imd", nil, true},
		{"=5", nil, true},
		{"imd=x", nil, true},
		{"imd=-1", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTargets(tt.in)
			if (err != nil) != tt.wantErr || len(got) != len(tt.want) {
				t.Fatalf("ParseTargets(%q) = %v, %v", tt.in, got, err)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("ParseTargets(%q) = %v", tt.in, got)
				}
			}
		})
	}
}

func TestWatch(t *testing.T) {
	self := os.Getpid()
	proc := procFixture(self, 100, 100)
	proc["77/stat"] = proc[strconv.Itoa(self)+"/stat"]
	proc["77/status"] = proc[strconv.Itoa(self)+"/status"]
	w := Start(proc, []Target{{"imd", 77}, {"gone", 88}})

	end := procFixture(self, 300, 200) // 3 s more CPU
	for k, v := range end {
		proc[k] = v
	}
	proc["stat"] = &fstest.MapFile{Data: []byte("cpu  300 0 300 1300 100 0 0 0 0 0\n")}
	usage, util := w.Stop()
	if len(usage) != 3 || usage[0].Name != "imctl" || usage[1].Name != "imd" || usage[2].Name != "gone" {
		t.Fatalf("usage = %+v", usage)
	}
	if usage[0].CPUSeconds != 3 || usage[0].RSSMB != 100 || usage[0].PeakRSSMB != 200 || usage[0].CPUCores <= 0 {
		t.Fatalf("imctl usage = %+v", usage[0])
	}
	if usage[1].CPUSeconds != 0 || usage[1].Err != "" {
		t.Fatalf("imd usage = %+v", usage[1])
	}
	if usage[2].Err == "" {
		t.Fatalf("a missing pid gave no error: %+v", usage[2])
	}
	if util != 0.4 { // busy 200→600 of total 1000→2000
		t.Fatalf("utilization = %v", util)
	}
}
