package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imdhq/imd/cmd/imctl/bench"
	"github.com/imdhq/imd/cmd/imctl/bench/procstat"
	"github.com/imdhq/imd/cmd/imctl/bench/report"
	"github.com/imdhq/imd/cmd/imctl/bench/serverwork"
	"github.com/imdhq/imd/cmd/imctl/bench/stages"
)

func newBenchCmd(g *globals, d deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a standard workload (DESIGN.md §10) against a live imd, verifying while measuring",
		Long: `W1–W5 are DESIGN.md §10's workloads; t1 and t2 have the shapes of the Tinode
comparison in issue 16 by default (run them with --warmup 5s --duration 30s to
reproduce its method). Each workload creates its own users, friendships and groups through the admin
API (ids offset by a random base, so runs never collide), connects them, runs for
--warmup then --duration, and stops by itself. It verifies while it measures:
every ACKed message must reach each online recipient exactly once and in seq
order, and be readable back through SYNC_MESSAGES. Any missing, duplicated or
misordered delivery makes the command fail, however fast the run was.

The report (ACKed msg/s, delivered frames/s, latency percentiles, errors by
code, CPU and memory of --pids, machine facts) is printed as markdown and
written with --json FILE / --md FILE.`,
	}
	cmd.AddCommand(
		newWorkloadCmd(g, d, bench.W1, "p2p: --users in friend pairs, each closed-loop to its friend", func(fs *pflag.FlagSet, c *bench.Config) {
			fs.IntVar(&c.Users, "users", 1000, "online users (even)")
		}),
		newWorkloadCmd(g, d, bench.W2, "groups: --users in groups of --group-size, each closed-loop to its group", func(fs *pflag.FlagSet, c *bench.Config) {
			fs.IntVar(&c.Users, "users", 1000, "online users (a multiple of --group-size)")
			fs.IntVar(&c.GroupSize, "group-size", 10, "members per group")
		}),
		newWorkloadCmd(g, d, bench.W3, "big group: one group of --members, all online, one sender at --rate", func(fs *pflag.FlagSet, c *bench.Config) {
			fs.IntVar(&c.Members, "members", 1000, "members of the group, all online")
			fs.Float64Var(&c.Rate, "rate", 100, "messages per second from the one sender")
		}),
		newWorkloadCmd(g, d, bench.W4, "idle: --conns authenticated connections that only heartbeat", func(fs *pflag.FlagSet, c *bench.Config) {
			fs.IntVar(&c.Conns, "conns", 1000, "connections to hold open")
			fs.IntVar(&c.Users, "users", 1000, "users the connections belong to (each gets conns/users devices)")
			fs.DurationVar(&c.Heartbeat, "heartbeat", 30*time.Second, "HEARTBEAT interval per connection")
		}),
		newWorkloadCmd(g, d, bench.W5, "history: GET_HISTORY pages over a topic spanning two months (advances the tenant's active month)", func(fs *pflag.FlagSet, c *bench.Config) {
			fs.IntVar(&c.Users, "users", 4, "reader connections paging at once")
			fs.IntVar(&c.Messages, "messages", 500, "messages sent in each of the two months")
			fs.IntVar(&c.PageSize, "page-size", 50, "messages per GET_HISTORY page")
		}),
		newWorkloadCmd(g, d, bench.T1, "Tinode's T1: --groups groups of --group-size, every member publishing closed-loop", func(fs *pflag.FlagSet, c *bench.Config) {
			fs.IntVar(&c.Groups, "groups", bench.T1Groups, "groups (Tinode's T1: 20)")
			fs.IntVar(&c.GroupSize, "group-size", bench.T1GroupSize, "members per group, all publishing (Tinode's T1: 10)")
		}),
		newWorkloadCmd(g, d, bench.T2, "Tinode's T2: one group of --members, --publishers of them closed-loop, the rest only receiving", func(fs *pflag.FlagSet, c *bench.Config) {
			fs.IntVar(&c.Members, "members", bench.T2Members, "members of the group, all online (Tinode's T2: 100)")
			fs.IntVar(&c.Publishers, "publishers", bench.T2Publishers, "members that publish (Tinode's T2: 50)")
		}),
		newSummaryCmd(),
		newStagesCmd(),
		newSeedCmd(g),
	)
	return cmd
}

// newSummaryCmd builds `imctl bench summary`: the headline figures of several JSON reports
// (one `task bench`) in one markdown table.
func newSummaryCmd() *cobra.Command {
	var mdFile string
	cmd := &cobra.Command{
		Use:   "summary REPORT.json...",
		Short: "Print the headline figures of JSON reports (--json of earlier runs) as one markdown table",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, paths []string) error {
			runs := make([]report.Report, 0, len(paths))
			for _, path := range paths {
				raw, err := os.ReadFile(path)
				if err != nil {
					return fmt.Errorf("summary: %w", err)
				}
				var r report.Report
				if err := json.Unmarshal(raw, &r); err != nil {
					return fmt.Errorf("summary: %s: %w", path, err)
				}
				runs = append(runs, r)
			}
			if mdFile != "" {
				if err := writeFile(mdFile, func(f *os.File) error { return report.WriteSummary(f, runs) }); err != nil {
					return fmt.Errorf("summary: %w", err)
				}
			}
			return report.WriteSummary(cmd.OutOrStdout(), runs)
		},
	}
	cmd.Flags().StringVar(&mdFile, "md", "", "also write the table to this file")
	return cmd
}

// newStagesCmd builds `imctl bench stages`: imd's CPU profile of a run divided among the
// stages of a message's life (package stages), in µs per ACKed message when given the run's
// report.
func newStagesCmd() *cobra.Command {
	var reportFile, mdFile string
	cmd := &cobra.Command{
		Use:   "stages CPU.pprof",
		Short: "Divide imd's CPU profile (bench --imd-cpuprofile) among the stages of a message's life, per ACKed message with --report",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("stages: %w", err)
			}
			samples, err := stages.Parse(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			title := "imd CPU by stage"
			var micros float64
			if reportFile != "" {
				raw, err := os.ReadFile(reportFile)
				if err != nil {
					return fmt.Errorf("stages: %w", err)
				}
				var r report.Report
				if err := json.Unmarshal(raw, &r); err != nil {
					return fmt.Errorf("stages: %s: %w", reportFile, err)
				}
				title += fmt.Sprintf(" — %s, %s ACKed msg/s", r.Workload, report.Thousands(int64(r.AckedPerSec+0.5)))
				if c, ok := r.Cost("imd"); ok {
					micros = c.MicrosPerMsg
				}
			}
			t := stages.Attribute(samples, stages.Stages)
			write := func(w io.Writer) error { return stages.WriteMarkdown(w, title, t, micros, stages.Stages) }
			if mdFile != "" {
				if err := writeFile(mdFile, func(f *os.File) error { return write(f) }); err != nil {
					return fmt.Errorf("stages: %w", err)
				}
			}
			return write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&reportFile, "report", "", "the run's JSON report (--json): turns shares into µs per ACKed message")
	cmd.Flags().StringVar(&mdFile, "md", "", "also write the table to this file")
	return cmd
}

// newSeedCmd builds `imctl bench seed`: months of stored history in a tenant, so that W1 on
// it can be compared with W1 on an empty one (DESIGN §10: send cost flat in months and tables).
func newSeedCmd(g *globals) *cobra.Command {
	cfg := bench.SeedConfig{}
	var dsn, database string
	cmd := &cobra.Command{
		Use:   "seed",
		Short: "Store --messages messages of --pairs P2P topics over the --months ending with the active one, straight into MySQL",
		Long: `Creates --pairs friend pairs through the admin API and writes their P2P
messages with multi-row INSERTs into the month tables (creating and registering
past months as sealed), the route mirror and the month catalog, as imd's writer
would have: send and sync treat them as real history. Dedup records (they
expire) and the search index (imd's own directory) are not written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Admin = g.admin()
			if dsn == "" {
				dsn = g.settings.get("mysql-dsn")
			}
			if dsn == "" {
				return errors.New("seed: --dsn is required")
			}
			if database == "" {
				database = "imd_" + cfg.Admin.Tenant()
			}
			db, err := openDatabase(dsn, database)
			if err != nil {
				return fmt.Errorf("seed: %w", err)
			}
			defer db.Close()
			db.SetMaxOpenConns(cfg.Parallel)
			cfg.DB = db
			cfg.Status = cmd.ErrOrStderr()
			return bench.Seed(cmd.Context(), cfg)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&cfg.Messages, "messages", 10_000_000, "messages to store in all (issue 16: 10 million)")
	fs.IntVar(&cfg.Months, "months", 24, "months they span, ending with the active one (issue 16: 24)")
	fs.IntVar(&cfg.Pairs, "pairs", 1000, "friend pairs, one P2P topic each")
	fs.IntVar(&cfg.Batch, "batch", 2000, "rows per INSERT")
	fs.IntVar(&cfg.Parallel, "parallel", 4, "months written (and admin calls) at once")
	fs.StringVar(&dsn, "dsn", "", "the tenant's MySQL server DSN (go-sql-driver form) ["+envName("mysql-dsn")+", or mysql-dsn in the profile]")
	fs.StringVar(&database, "database", "", "the tenant's database (default imd_<tenant>)")
	return cmd
}

// newWorkloadCmd builds `imctl bench NAME`: the common flags plus the
// workload's own.
func newWorkloadCmd(g *globals, d deps, name, short string, own func(*pflag.FlagSet, *bench.Config)) *cobra.Command {
	cmd := &cobra.Command{Use: name, Short: short, Args: cobra.NoArgs}
	cfg := bench.Config{Workload: name}
	fs := cmd.Flags()
	own(fs, &cfg)
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured window (the run always stops by itself)")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "load before the window: verified, not measured")
	fs.IntVar(&cfg.Parallel, "parallel", 64, "concurrent admin calls and dials during setup")
	fs.IntVar(&cfg.SyncMax, "sync-max", 200_000, "read back at most this many ACKed messages through SYNC_MESSAGES (whole topics, sampled)")
	sourceIPs := fs.String("source-ips", "", "local addresses to spread connections over, e.g. 127.0.0.2,127.0.0.3")
	pids := fs.String("pids", "", "processes to measure, e.g. imd=123,mariadbd=456,redis=789")
	jsonFile := fs.String("json", "", "write the report as JSON to this file")
	mdFile := fs.String("md", "", "write the report as markdown to this file")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's own CPU profile to this file")
	extra := fs.StringToString("param", nil, "facts about the setup the report should carry among its parameters, e.g. history=10M/24mo")
	imdProfile := fs.String("imd-cpuprofile", "", "write imd's CPU profile over the measured window (/debug/pprof/profile, admin key) to this file")
	redisAddrs := fs.String("redis", "", "the tenant's Redis (one address, or Cluster nodes a,b,c): its commands, round trips and main-thread CPU per ACKed message")
	mysqlDSN := fs.String("mysql-dsn", "", "the tenant's MySQL server DSN (go-sql-driver form): its rows written, COMMITs and fsyncs per ACKed message")

	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		if *cpuProfile != "" {
			stop, err := profileCPU(*cpuProfile)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, stop()) }()
		}
		targets, err := procstat.ParseTargets(*pids)
		if err != nil {
			return fmt.Errorf("--pids: %w", err)
		}
		run := cfg
		run.SourceIPs = bench.SplitList(*sourceIPs)
		run.Targets = targets
		run.Dial = g.dialOptions()
		// --tcp a,b,c spreads the connections over several nodes of one tenant.
		run.Nodes = bench.SplitList(run.Dial.Addr)
		if len(run.Nodes) > 0 {
			run.Dial.Addr = run.Nodes[0]
		}
		if len(run.Nodes) < 2 {
			run.Nodes = nil
		}
		run.Admin = g.admin()
		if *imdProfile != "" {
			run.ServerProfile = func(ctx context.Context, window time.Duration) error {
				return writeFile(*imdProfile, func(f *os.File) error { return run.Admin.CPUProfile(ctx, window, f) })
			}
		}
		if *redisAddrs != "" || *mysqlDSN != "" {
			servers, err := serverwork.Open(bench.SplitList(*redisAddrs), *mysqlDSN)
			if err != nil {
				return err
			}
			defer servers.Close()
			run.ServerWork = servers.Read
		}
		run.Status = cmd.ErrOrStderr()
		run.Live = d.terminal
		rep, err := d.runBench(cmd.Context(), run)
		if err != nil {
			return err
		}
		for k, v := range *extra {
			if rep.Params == nil {
				rep.Params = make(map[string]string)
			}
			rep.Params[k] = v
		}
		if err := writeReports(rep, *jsonFile, *mdFile); err != nil {
			return err
		}
		if err := report.WriteMarkdown(cmd.OutOrStdout(), rep); err != nil {
			return err
		}
		if !rep.Pass {
			return fmt.Errorf("bench %s failed verification: %s", name, strings.Join(rep.Problems, "; "))
		}
		return nil
	}
	return cmd
}

// profileCPU starts Go's CPU profiler writing to path; the load generator shares the machine with
// the server, so its own cost is part of every figure.
func profileCPU(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}

func writeReports(rep report.Report, jsonFile, mdFile string) error {
	for _, out := range []struct {
		path  string
		write func(f *os.File) error
	}{
		{jsonFile, func(f *os.File) error { return report.WriteJSON(f, rep) }},
		{mdFile, func(f *os.File) error { return report.WriteMarkdown(f, rep) }},
	} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, out.write); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

// writeFile creates path and fills it with write, reporting the first failure.
func writeFile(path string, write func(f *os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}
