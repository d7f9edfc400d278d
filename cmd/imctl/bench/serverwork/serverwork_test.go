package serverwork

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestParseInfo(t *testing.T) {
	info := strings.Join([]string{
		"# Stats", "total_connections_received:12", "total_commands_processed:75319",
		"total_reads_processed:1693", "total_writes_processed:1653",
		"# CPU", "used_cpu_sys:1.55", "used_cpu_user:2.49",
		"used_cpu_sys_main_thread:1.5", "used_cpu_user_main_thread:2.25",
		"# Commandstats",
		"cmdstat_evalsha:calls=100,usec=5000,usec_per_call=50.00,rejected_calls=0,failed_calls=1",
		"cmdstat_set:calls=2466,usec=6951,usec_per_call=2.82,rejected_calls=0,failed_calls=0",
	}, "\r\n")
	tests := []struct {
		name    string
		info    string
		want    Redis
		wantErr string
	}{
		{name: "Redis 7", info: info, want: Redis{Addr: "r", Commands: 75319, Reads: 1693, MainThreadCPU: 3.75,
			ByCommand: map[string]Command{"evalsha": {Calls: 100, Usec: 5000}, "set": {Calls: 2466, Usec: 6951}}}},
		{name: "no main thread CPU (before Redis 7)", info: "total_commands_processed:1\r\ntotal_reads_processed:1\r\n", wantErr: "Redis 7"},
		{name: "a counter that is not a number", info: strings.Replace(info, "1693", "x", 1), wantErr: "total_reads_processed"},
		{name: "a command stat that is not a number", info: strings.Replace(info, "calls=100", "calls=y", 1), wantErr: "cmdstat_evalsha"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseInfo("r", tt.info)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Addr != tt.want.Addr || got.Commands != tt.want.Commands || got.Reads != tt.want.Reads ||
				got.MainThreadCPU != tt.want.MainThreadCPU || len(got.ByCommand) != len(tt.want.ByCommand) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for k, v := range tt.want.ByCommand {
				if got.ByCommand[k] != v {
					t.Fatalf("%s: %+v, want %+v", k, got.ByCommand[k], v)
				}
			}
		})
	}
}

func TestSub(t *testing.T) {
	before := Snapshot{
		Redis: []Redis{{Addr: "a", Commands: 10, Reads: 5, MainThreadCPU: 1, ByCommand: map[string]Command{"get": {Calls: 3, Usec: 30}}}},
		MySQL: &MySQL{RowsWritten: 100, Commits: 10, Fsyncs: 20},
	}
	after := Snapshot{
		Redis: []Redis{
			{Addr: "a", Commands: 110, Reads: 25, MainThreadCPU: 1.5, ByCommand: map[string]Command{"get": {Calls: 3, Usec: 30}, "set": {Calls: 7, Usec: 70}}},
			{Addr: "b", Commands: 4, Reads: 2, MainThreadCPU: 0.25, ByCommand: map[string]Command{}},
		},
		MySQL: &MySQL{RowsWritten: 400, Commits: 13, Fsyncs: 26},
	}
	d := after.Sub(before)
	a, b := d.Redis[0], d.Redis[1]
	if a.Commands != 100 || a.Reads != 20 || a.MainThreadCPU != 0.5 || len(a.ByCommand) != 1 || a.ByCommand["set"] != (Command{7, 70}) {
		t.Fatalf("master a: %+v (a command that did not run drops out)", a)
	}
	if b.Commands != 4 || b.MainThreadCPU != 0.25 {
		t.Fatalf("master b, new in the window: %+v", b)
	}
	if *d.MySQL != (MySQL{RowsWritten: 300, Commits: 3, Fsyncs: 6}) {
		t.Fatalf("mysql %+v", *d.MySQL)
	}
}

// TestReadLiveServers reads the counters of the suite's Redis and MariaDB when they run
// (IMD_TEST_REDIS_ADDR, IMD_TEST_MYSQL_DSN from deploy/local/services.sh), and sees them move.
func TestReadLiveServers(t *testing.T) {
	addr, dsn := os.Getenv("IMD_TEST_REDIS_ADDR"), os.Getenv("IMD_TEST_MYSQL_DSN")
	if addr == "" || dsn == "" {
		t.Skip("IMD_TEST_REDIS_ADDR and IMD_TEST_MYSQL_DSN unset: no services")
	}
	s, err := Open([]string{addr}, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	before, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if len(d.Redis) != 1 || d.Redis[0].Commands < 1 || d.MySQL == nil || after.MySQL.RowsWritten == 0 {
		t.Fatalf("the reads themselves did not show: %+v", d)
	}
}
