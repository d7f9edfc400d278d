// Package serverwork reads what the servers behind imd did over a bench window: Redis's
// commands, round trips and main-thread CPU, MariaDB's rows written, commits and fsyncs. A
// report divides them by the messages ACKed in the window, so a run says what each message
// costs the servers a tenant cannot spread (one Redis main thread per slot owner, one MariaDB
// primary) and which ceiling that implies (docs/BENCHMARKS.md, issue 30).
package serverwork

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/rueidis"
)

// Redis is one Redis server's counters (INFO stats, cpu and commandstats).
type Redis struct {
	Addr string `json:"addr"`
	// Commands counts every command executed, those a script or function ran included.
	Commands int64 `json:"commands"`
	// Reads counts the read events of client connections: a round trip, however many
	// commands a pipeline carried in it.
	Reads int64 `json:"reads"`
	// MainThreadCPU is the CPU seconds of Redis's one command-executing thread: the serial
	// stage of every key it owns.
	MainThreadCPU float64            `json:"main_thread_cpu_s"`
	ByCommand     map[string]Command `json:"by_command"`
}

// Command is one command's calls and the microseconds Redis spent in them (a script's
// include those of the commands it ran).
type Command struct {
	Calls int64 `json:"calls"`
	Usec  int64 `json:"usec"`
}

// MySQL is a MariaDB (or MySQL) server's InnoDB and statement counters (SHOW GLOBAL STATUS).
type MySQL struct {
	// RowsWritten is Handler_write + Handler_update + Handler_delete: the rows the storage
	// engines were asked to write (MariaDB has no Innodb_rows_* counters).
	RowsWritten int64 `json:"rows_written"`
	Commits     int64 `json:"commits"` // Com_commit: explicit COMMITs
	Fsyncs      int64 `json:"fsyncs"`  // Innodb_data_fsyncs: every fsync InnoDB made, redo log included
}

// Snapshot is the counters at one instant, or (Sub) their growth over a window.
type Snapshot struct {
	Redis []Redis `json:"redis,omitempty"` // one per master, in address order
	MySQL *MySQL  `json:"mysql,omitempty"`
}

// Sub is what grew from before to s. Redis servers are matched by address; one missing from
// before is counted from zero.
func (s Snapshot) Sub(before Snapshot) Snapshot {
	out := Snapshot{}
	for _, r := range s.Redis {
		var b Redis
		for _, c := range before.Redis {
			if c.Addr == r.Addr {
				b = c
			}
		}
		d := Redis{Addr: r.Addr, Commands: r.Commands - b.Commands, Reads: r.Reads - b.Reads,
			MainThreadCPU: r.MainThreadCPU - b.MainThreadCPU, ByCommand: map[string]Command{}}
		for name, c := range r.ByCommand {
			prev := b.ByCommand[name]
			if calls := c.Calls - prev.Calls; calls > 0 {
				d.ByCommand[name] = Command{Calls: calls, Usec: c.Usec - prev.Usec}
			}
		}
		out.Redis = append(out.Redis, d)
	}
	if s.MySQL != nil && before.MySQL != nil {
		out.MySQL = &MySQL{
			RowsWritten: s.MySQL.RowsWritten - before.MySQL.RowsWritten,
			Commits:     s.MySQL.Commits - before.MySQL.Commits,
			Fsyncs:      s.MySQL.Fsyncs - before.MySQL.Fsyncs,
		}
	}
	return out
}

// ParseInfo reads the counters out of the text of `INFO stats cpu commandstats`.
func ParseInfo(addr, info string) (Redis, error) {
	r := Redis{Addr: addr, ByCommand: map[string]Command{}}
	var cpuUser, cpuSys float64
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		var err error
		switch {
		case key == "total_commands_processed":
			r.Commands, err = strconv.ParseInt(value, 10, 64)
			seen++
		case key == "total_reads_processed":
			r.Reads, err = strconv.ParseInt(value, 10, 64)
			seen++
		case key == "used_cpu_user_main_thread":
			cpuUser, err = strconv.ParseFloat(value, 64)
			seen++
		case key == "used_cpu_sys_main_thread":
			cpuSys, err = strconv.ParseFloat(value, 64)
			seen++
		case strings.HasPrefix(key, "cmdstat_"):
			var c Command
			c, err = parseCommandStat(value)
			r.ByCommand[strings.TrimPrefix(key, "cmdstat_")] = c
		}
		if err != nil {
			return Redis{}, fmt.Errorf("redis %s INFO %s: %w", addr, key, err)
		}
	}
	if seen < 4 {
		// total_reads_processed and the main thread's CPU came with Redis 7.0; older
		// servers cannot say what a message costs the serial stage.
		return Redis{}, fmt.Errorf("redis %s: INFO lacks total_commands_processed, total_reads_processed or the main thread's CPU (Redis 7 or later)", addr)
	}
	r.MainThreadCPU = cpuUser + cpuSys
	return r, nil
}

// parseCommandStat reads "calls=N,usec=N,usec_per_call=F,…".
func parseCommandStat(v string) (Command, error) {
	var c Command
	for field := range strings.SplitSeq(v, ",") {
		k, n, _ := strings.Cut(field, "=")
		var err error
		switch k {
		case "calls":
			c.Calls, err = strconv.ParseInt(n, 10, 64)
		case "usec":
			c.Usec, err = strconv.ParseInt(n, 10, 64)
		}
		if err != nil {
			return Command{}, fmt.Errorf("%s: %w", field, err)
		}
	}
	return c, nil
}

// Source reads the servers' counters; either server may be left out.
type Source struct {
	redis rueidis.Client // nil: no Redis
	db    *sql.DB        // nil: no MySQL
}

// Open connects to Redis at addrs (one server, or any nodes of a Cluster: every master is
// read) and to MySQL at dsn (go-sql-driver form); empty means leave that server out.
func Open(addrs []string, dsn string) (*Source, error) {
	s := &Source{}
	if len(addrs) > 0 {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
		if err != nil {
			return nil, fmt.Errorf("redis %v: %w", addrs, err)
		}
		s.redis = c
	}
	if dsn != "" {
		cfg, err := mysql.ParseDSN(dsn)
		if err == nil {
			var conn driver.Connector
			if conn, err = mysql.NewConnector(cfg); err == nil {
				s.db = sql.OpenDB(conn)
				s.db.SetMaxOpenConns(1)
			}
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("mysql DSN: %w", err)
		}
	}
	return s, nil
}

// Read takes a snapshot of every server's counters.
func (s *Source) Read(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	var errs []error
	if s.redis != nil {
		nodes := s.redis.Nodes()
		for _, addr := range slices.Sorted(maps.Keys(nodes)) {
			c := nodes[addr]
			role, err := c.Do(ctx, c.B().Role().Build()).ToArray()
			if err == nil && len(role) > 0 {
				if kind, _ := role[0].ToString(); kind != "master" {
					continue // a replica executes its master's writes, not the tenant's load
				}
			}
			info, err := c.Do(ctx, c.B().Info().Section("stats", "cpu", "commandstats").Build()).ToString()
			if err == nil {
				var r Redis
				if r, err = ParseInfo(addr, info); err == nil {
					snap.Redis = append(snap.Redis, r)
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("redis %s: %w", addr, err))
			}
		}
	}
	if s.db != nil {
		m, err := s.readMySQL(ctx)
		if err != nil {
			errs = append(errs, err)
		} else {
			snap.MySQL = &m
		}
	}
	return snap, errors.Join(errs...)
}

func (s *Source) readMySQL(ctx context.Context) (MySQL, error) {
	rows, err := s.db.QueryContext(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN
		('Handler_write', 'Handler_update', 'Handler_delete', 'Com_commit', 'Innodb_data_fsyncs')`)
	if err != nil {
		return MySQL{}, fmt.Errorf("mysql status: %w", err)
	}
	defer rows.Close()
	var m MySQL
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return MySQL{}, fmt.Errorf("mysql status: %w", err)
		}
		switch name {
		case "Handler_write", "Handler_update", "Handler_delete":
			m.RowsWritten += v
		case "Com_commit":
			m.Commits = v
		case "Innodb_data_fsyncs":
			m.Fsyncs = v
		}
	}
	if err := rows.Err(); err != nil {
		return MySQL{}, fmt.Errorf("mysql status: %w", err)
	}
	return m, nil
}

// Close ends the connections.
func (s *Source) Close() {
	if s.redis != nil {
		s.redis.Close()
	}
	if s.db != nil {
		_ = s.db.Close()
	}
}
