package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/imdhq/imd/adapters/mysql/legacygen"
	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/progress"
)

func newMigrateCmd(g *globals, d deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move the legacy table im_group_messages into the month tables (seed 000 §9)",
		Long: `The legacy migration of the tenant, run by imd in the background:

  plan     what the legacy table holds per month (a full scan; writes nothing)
  start    record the cutover watermark and copy in batches (needs migration.dual_read on)
  pause    stop after the batch in flight; resume continues at the cursor
  status   the job, each month's progress and the verification report
  verify   compare every month again (counts, seq ranges, content hashes)
  finish   stop reading the legacy table and rename it im_group_messages_legacy
  gen      write a generated legacy table into a database, for tests and trials

start, resume, verify and status take --watch: the phase, rows done of the total, the
rate over the last 30 s and the ETA, and a line per month copied, until the job stops.
A paused job is waited for, and a restarting imd is polled until it answers again.`,
	}
	cmd.AddCommand(
		newMigratePlanCmd(g),
		newMigrateStartCmd(g, d),
		newMigrateCommandCmd(g, d, "pause", "Stop the copy after the batch in flight", false),
		newMigrateCommandCmd(g, d, "resume", "Continue a paused or failed migration at its cursor", true),
		newMigrateCommandCmd(g, d, "verify", "Compare every month of the legacy table with the month tables again", true),
		newMigrateCommandCmd(g, d, "finish", "Stop reading the legacy table and rename it im_group_messages_legacy", false),
		newMigrateStatusCmd(g, d),
		newMigrateGenCmd(g),
	)
	return cmd
}

func newMigratePlanCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "plan", Short: "Show what the legacy table holds per month", Args: cobra.NoArgs}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := g.admin().MigrationPlan(cmd.Context())
		if err != nil {
			return err
		}
		return out.print(cmd, p, func(w io.Writer) { migrationPlanTable(w, p) })
	}
	return cmd
}

func migrationPlanTable(w io.Writer, p adminapi.MigrationPlan) {
	if !p.Present {
		fmt.Fprintf(w, "no legacy table im_group_messages (migration %s)\n", p.Phase)
		return
	}
	fmt.Fprintf(w, "legacy table: %d rows, %d topics, %d months; migration %s\n", p.Rows, p.Topics, len(p.Months), p.Phase)
	rows := make([][]string, len(p.Months))
	for i, m := range p.Months {
		state := m.TableState
		if state == "" {
			state = "(created by start)"
		}
		rows[i] = []string{m.Month, fmt.Sprint(m.Rows), fmt.Sprint(m.Topics), millisTime(m.MinCreatedAt), millisTime(m.MaxCreatedAt), state}
	}
	table(w, []string{"MONTH", "ROWS", "TOPICS", "FIRST", "LAST", "MONTH TABLE"}, rows)
	if !p.CursorIndex {
		fmt.Fprintln(w, "start adds the index (created_at, message_id) the copy pages by (online DDL)")
	}
	for _, warning := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
}

func newMigrateStartCmd(g *globals, d deps) *cobra.Command {
	cmd := &cobra.Command{Use: "start", Short: "Record the cutover and start copying", Args: cobra.NoArgs}
	rerun := cmd.Flags().Bool("rerun", false, "copy a stopped or verified migration again from the first row (idempotent)")
	watch := watchFlags(cmd)
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		job, err := g.admin().MigrationStart(cmd.Context(), *rerun)
		if err != nil {
			return err
		}
		if *watch.on {
			return watchMigration(cmd.Context(), g.admin(), d, *watch.every, cmd.OutOrStdout())
		}
		return out.print(cmd, job, func(w io.Writer) { jobSummary(w, job) })
	}
	return cmd
}

func newMigrateCommandCmd(g *globals, d deps, name, short string, watchable bool) *cobra.Command {
	cmd := &cobra.Command{Use: name, Short: short, Args: cobra.NoArgs}
	var watch watchOptions
	if watchable {
		watch = watchFlags(cmd)
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		job, err := g.admin().MigrationCommand(cmd.Context(), name)
		if err != nil {
			return err
		}
		if watchable && *watch.on {
			return watchMigration(cmd.Context(), g.admin(), d, *watch.every, cmd.OutOrStdout())
		}
		return out.print(cmd, job, func(w io.Writer) { jobSummary(w, job) })
	}
	return cmd
}

func newMigrateStatusCmd(g *globals, d deps) *cobra.Command {
	cmd := &cobra.Command{Use: "status", Short: "Show the migration, its months and the verification report", Args: cobra.NoArgs}
	watch := watchFlags(cmd)
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *watch.on {
			return watchMigration(cmd.Context(), g.admin(), d, *watch.every, cmd.OutOrStdout())
		}
		st, err := g.admin().MigrationStatus(cmd.Context())
		if err != nil {
			return err
		}
		return out.print(cmd, st, func(w io.Writer) { statusTable(w, st) })
	}
	return cmd
}

type watchOptions struct {
	on    *bool
	every *time.Duration
}

func watchFlags(cmd *cobra.Command) watchOptions {
	return watchOptions{
		on:    cmd.Flags().Bool("watch", false, "follow the job until it stops: phase, rows, rate, ETA"),
		every: cmd.Flags().Duration("interval", time.Second, "how often --watch polls"),
	}
}

func jobSummary(w io.Writer, j adminapi.MigrationJob) {
	fmt.Fprintf(w, "migration %s (run %d)", j.Phase, j.Run)
	if j.CutoverAt > 0 {
		fmt.Fprintf(w, ", cutover %s", millisTime(j.CutoverAt))
	}
	fmt.Fprintf(w, ": %d of %d rows handled (copied %d, skipped %d, failed %d) in %d batches\n",
		j.Rows-j.Remaining, j.Rows, j.Copied, j.Skipped, j.Failed, j.Batches)
	if j.Error != "" {
		fmt.Fprintf(w, "error: %s\n", j.Error)
	}
}

func statusTable(w io.Writer, st adminapi.MigrationStatus) {
	jobSummary(w, st.Job)
	if st.RowsPerSecond > 0 {
		fmt.Fprintf(w, "%.0f rows/s, ETA %s\n", st.RowsPerSecond, (time.Duration(st.ETASeconds) * time.Second).String())
	}
	if len(st.Months) > 0 {
		rows := make([][]string, len(st.Months))
		for i, m := range st.Months {
			rows[i] = []string{m.Month, fmt.Sprint(m.Rows), fmt.Sprint(m.Topics), fmt.Sprint(m.Done), fmt.Sprint(m.Copied),
				fmt.Sprint(m.Skipped), fmt.Sprint(m.Failed), orDash(m.Verified)}
		}
		table(w, []string{"MONTH", "ROWS", "TOPICS", "DONE", "COPIED", "SKIPPED", "FAILED", "VERIFIED"}, rows)
	}
	reportTable(w, st.Job.Report)
}

func reportTable(w io.Writer, r *adminapi.MigrationReport) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "verification at %s: %d rows in %d topic-months, %d changed through imd since the cutover\n",
		millisTime(r.At), r.Rows, r.TopicMonths, r.Modified)
	if len(r.Mismatches) == 0 {
		return
	}
	rows := make([][]string, len(r.Mismatches))
	for i, m := range r.Mismatches {
		rows[i] = []string{m.Topic, m.Month, m.Kind, fmt.Sprintf("%d-%d", m.FromSeq, m.ToSeq), fmt.Sprint(m.Rows)}
	}
	table(w, []string{"TOPIC", "MONTH", "KIND", "SEQS", "ROWS"}, rows)
	if r.Unlisted > 0 {
		fmt.Fprintf(w, "… and %d more\n", r.Unlisted)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errMigrationFailed makes a watched job that failed exit non-zero.
var errMigrationFailed = errors.New("migration failed")

// watchMigration follows the job until it stops copying and verifying, then prints the
// status table. A paused job is waited for (resume continues it), and an imd that does not
// answer (a restart, a deploy) is polled until it does: the job runs on in the server, so
// the watch picks it up where it is.
func watchMigration(ctx context.Context, c *adminapi.Client, d deps, every time.Duration, out io.Writer) error {
	mw := newMigrationWatch(d.stderr, d.terminal)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		st, err := c.MigrationStatus(ctx)
		switch {
		case err == nil:
			mw.show(time.Now(), st)
			if !st.Job.Running() && st.Job.Phase != "paused" {
				mw.close()
				statusTable(out, st)
				if st.Job.Phase == "failed" {
					return fmt.Errorf("%w: %s", errMigrationFailed, st.Job.Error)
				}
				return nil
			}
		case ctx.Err() == nil && adminapi.Retryable(err):
			mw.unreachable(time.Now(), err)
		default:
			mw.close()
			return err
		}
		select {
		case <-ctx.Done():
			mw.close()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// logEvery is how often a watch without a terminal prints its progress.
const logEvery = 5 * time.Second

// migrationWatch draws the job's progress: on a terminal one line redrawn in place, otherwise
// a line every logEvery and at each change of phase, plus a line per finished month.
type migrationWatch struct {
	w         io.Writer
	terminal  bool
	meter     *progress.Meter
	done      map[string]bool // months whose copy was reported finished
	lastLine  time.Time
	lastPhase string
	drawn     bool // a terminal line is on screen
}

func newMigrationWatch(w io.Writer, terminal bool) *migrationWatch {
	return &migrationWatch{w: w, terminal: terminal, meter: progress.New(progress.DefaultWindow), done: map[string]bool{}}
}

func (mw *migrationWatch) show(now time.Time, st adminapi.MigrationStatus) {
	if mw.w == nil {
		return
	}
	for _, m := range st.Months {
		if !mw.done[m.Month] && m.Rows > 0 && m.Done >= m.Rows {
			mw.done[m.Month] = true
			mw.println(fmt.Sprintf("month %s copied: %s rows (copied %s, skipped %s, failed %s)", m.Month,
				progress.Count(m.Rows), progress.Count(m.Copied), progress.Count(m.Skipped), progress.Count(m.Failed)))
		}
	}
	mw.status(now, migrationLine(mw.meter, now, st))
}

// migrationLine observes st and says where the job is. Copy progress is the job's rows
// handled; verification progress is the rows of the months verified so far plus the rows
// compared of the month in progress, which only the node verifying knows: answered by another
// node, the count moves a month at a time, and the line says so.
func migrationLine(m *progress.Meter, now time.Time, st adminapi.MigrationStatus) string {
	j := st.Job
	switch {
	case j.Phase == "copying" && !j.Prepared:
		m.Observe(now, "preparing", 0, j.Rows)
		return "preparing: adding the index (created_at, message_id) the copy pages by to the legacy table (online DDL), " +
			"then the month tables, seq counters and routes; no rows are copied before"
	case j.Phase == "verifying":
		var verified, months int64
		current := ""
		for _, mo := range st.Months {
			switch {
			case mo.Verified == "ok":
				verified += mo.Rows
				months++
			case st.Verifying != nil && mo.Month == st.Verifying.Month:
				verified += min(st.Verifying.Rows, mo.Rows)
				current = ", comparing " + mo.Month
			}
		}
		if st.Verifying == nil {
			current = " (whole months: another node verifies)"
		}
		m.Observe(now, "verifying", verified, j.Rows)
		return fmt.Sprintf("%s, %d of %d months%s", m.Line("rows"), months, len(st.Months), current)
	case j.Phase == "paused":
		m.Observe(now, "paused", j.Rows-j.Remaining, j.Rows)
		return fmt.Sprintf("paused at %s of %s rows: waiting for resume (imctl migrate resume; Ctrl-C stops watching, not the job)",
			progress.Count(j.Rows-j.Remaining), progress.Count(j.Rows))
	}
	m.Observe(now, j.Phase, j.Rows-j.Remaining, j.Rows)
	return m.Line("rows")
}

func (mw *migrationWatch) unreachable(now time.Time, err error) {
	if mw.w != nil {
		mw.status(now, fmt.Sprintf("imd does not answer (%v): retrying; the job goes on in the server", err))
	}
}

// status shows the current line: in place on a terminal, else when due.
func (mw *migrationWatch) status(now time.Time, line string) {
	if mw.terminal {
		fmt.Fprintf(mw.w, "\r\033[K%s", line)
		mw.drawn = true
		return
	}
	phase, _, _ := strings.Cut(line, ":")
	if phase == mw.lastPhase && now.Sub(mw.lastLine) < logEvery {
		return
	}
	mw.lastPhase, mw.lastLine = phase, now
	fmt.Fprintln(mw.w, line)
}

// println writes a line that stays, above a terminal's status line.
func (mw *migrationWatch) println(line string) {
	if mw.terminal && mw.drawn {
		fmt.Fprint(mw.w, "\r\033[K")
		mw.drawn = false
	}
	fmt.Fprintln(mw.w, line)
}

func (mw *migrationWatch) close() {
	if mw.w != nil && mw.drawn {
		fmt.Fprintln(mw.w)
		mw.drawn = false
	}
}

func newMigrateGenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Write a generated legacy table im_group_messages into a tenant database",
		Long: `gen writes a realistic legacy table straight into a MySQL database: group and P2P topics
of very different sizes over the last --months months, some recalled, edited and deleted rows,
and users' delete ranges. With --social it also creates the users, groups and friendships
through the admin API, so members can read their old messages. For tests and trials only.`,
		Args: cobra.NoArgs,
	}
	dsn := cmd.Flags().String("dsn", "", "MySQL server DSN (go-sql-driver form) ["+envName("mysql-dsn")+", or mysql-dsn in the profile]")
	database := cmd.Flags().String("database", "", "tenant database (default imd_<tenant>)")
	spec := legacygen.Spec{}
	cmd.Flags().IntVar(&spec.Rows, "rows", 100_000, "messages")
	cmd.Flags().IntVar(&spec.Groups, "groups", 200, "group topics")
	cmd.Flags().IntVar(&spec.Pairs, "pairs", 50, "P2P topics")
	cmd.Flags().IntVar(&spec.Months, "months", 12, "months the messages span, ending now")
	cmd.Flags().Uint64Var(&spec.Seed, "seed", 1, "random seed: the same seed writes the same rows")
	social := cmd.Flags().Bool("social", false, "create the users, groups and friendships through the admin API")
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *dsn == "" {
			*dsn = g.settings.get("mysql-dsn")
		}
		if *dsn == "" {
			return errors.New("--dsn is required")
		}
		if *database == "" {
			*database = "imd_" + g.tenant
		}
		db, err := openDatabase(*dsn, *database)
		if err != nil {
			return err
		}
		defer db.Close()
		if spec.IDs, err = snowflake.New(0); err != nil { // composes, never issues
			return err
		}
		sum, err := legacygen.Generate(cmd.Context(), db, spec)
		if err != nil {
			return err
		}
		if *social {
			if err := createSocial(cmd.Context(), g.admin(), sum); err != nil {
				return err
			}
		}
		result := map[string]any{"database": *database, "rows": sum.Rows, "topics": len(sum.Topics), "dellog_ranges": sum.Dellog,
			"from": sum.From.UnixMilli(), "to": sum.To.UnixMilli()}
		return out.print(cmd, result, func(w io.Writer) {
			fmt.Fprintf(w, "%s.im_group_messages: %d rows in %d topics from %s to %s, %d delete ranges\n", *database, sum.Rows,
				len(sum.Topics), sum.From.Format(time.RFC3339), sum.To.Format(time.RFC3339), sum.Dellog)
		})
	}
	return cmd
}

// openDatabase connects to one database of the server named by dsn, in UTC.
func openDatabase(dsn, database string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	cfg.DBName, cfg.ParseTime, cfg.Loc = database, true, time.UTC
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", database, err)
	}
	return db, nil
}

// createSocial makes the generated topics readable: users, groups with their members, and
// friendships for the P2P pairs.
func createSocial(ctx context.Context, c *adminapi.Client, sum legacygen.Summary) error {
	for _, u := range sum.Users() {
		if err := c.CreateUser(ctx, u, ""); err != nil {
			return fmt.Errorf("user %d: %w", u, err)
		}
	}
	for _, t := range sum.Topics {
		var err error
		if t.GroupID != 0 {
			_, err = c.CreateGroup(ctx, t.GroupID, t.Owner, t.Members[1:])
		} else {
			err = c.Friend(ctx, t.Members[0], t.Members[1])
		}
		if err != nil && adminapi.CodeOf(err) != 40901 { // 40901: made by an earlier run
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return nil
}
