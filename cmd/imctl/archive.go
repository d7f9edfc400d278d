package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/progress"
)

// followInterval is how often a running job is polled for progress.
const followInterval = 500 * time.Millisecond

func newArchiveCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "archive YYYYMM",
		Short: "Archive a sealed month to the blob store (checked, exported, read back), with progress",
		Long: `archive exports a sealed month per topic as gzip NDJSON chunks with a manifest, reads
everything back, and marks the month archived; reads then go to the archive. The table stays
until 'archive drop'. Subcommands check, drop, purge and show work on one month too.`,
		Args: cobra.ExactArgs(1),
	}
	out := withJSON(cmd)
	full := fullFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		j, err := runMonthJob(cmd, g, "archive", args[0])
		if err != nil {
			return err
		}
		m, err := g.admin().Manifest(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return out.print(cmd, map[string]any{"job": j, "manifest": m}, func(w io.Writer) { manifestTable(w, m, *full) })
	}
	for _, sub := range []struct{ name, op, short string }{
		{"check", "archive/check", "Run every check of archiving, write nothing"},
		{"drop", "drop", "Drop an archived month's table after verifying it against the archive"},
		{"purge", "purge", "End an archived month for good: files, table, routes, mirror rows, index entries"},
	} {
		c := &cobra.Command{Use: sub.name + " YYYYMM", Short: sub.short, Args: cobra.ExactArgs(1)}
		subOut := withJSON(c)
		c.RunE = func(cmd *cobra.Command, args []string) error {
			j, err := runMonthJob(cmd, g, sub.op, args[0])
			if err != nil {
				return err
			}
			return subOut.print(cmd, j, func(w io.Writer) {
				jobDone(w, j)
				if sub.op == "archive/check" {
					checkReport(w, j.Result)
				}
			})
		}
		cmd.AddCommand(c)
	}
	show := &cobra.Command{Use: "show YYYYMM", Short: "Show an archived month's manifest", Args: cobra.ExactArgs(1)}
	showOut := withJSON(show)
	showFull := fullFlag(show)
	show.RunE = func(cmd *cobra.Command, args []string) error {
		m, err := g.admin().Manifest(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return showOut.print(cmd, m, func(w io.Writer) { manifestTable(w, m, *showFull) })
	}
	cmd.AddCommand(show)
	return cmd
}

func newRestoreCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore YYYYMM",
		Short: "Bring an archived month back into a MySQL table (sealed again), with progress",
		Args:  cobra.ExactArgs(1),
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		j, err := runMonthJob(cmd, g, "restore", args[0])
		if err != nil {
			return err
		}
		return out.print(cmd, j, func(w io.Writer) { jobDone(w, j) })
	}
	return cmd
}

func newRetentionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Show what the tenant's retention policy asks for now",
		Args:  cobra.NoArgs,
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		raw, err := g.admin().RetentionPlan(cmd.Context())
		if err != nil {
			return err
		}
		return out.print(cmd, raw, func(w io.Writer) { planTable(w, raw) })
	}
	run := &cobra.Command{Use: "run", Short: "Carry the retention plan out, with progress", Args: cobra.NoArgs}
	runOut := withJSON(run)
	run.RunE = func(cmd *cobra.Command, _ []string) error {
		j, err := g.admin().RunRetention(cmd.Context())
		if err == nil {
			j, err = g.admin().Follow(cmd.Context(), j, followInterval, progressPrinter(cmd))
		}
		if err != nil {
			return err
		}
		return runOut.print(cmd, j, func(w io.Writer) { planTable(w, j.Result) })
	}
	cmd.AddCommand(run)
	return cmd
}

func newSearchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "search", Short: "Long-term search index"}
	reindex := &cobra.Command{
		Use:   "reindex [--from YYYYMM] [--to YYYYMM]",
		Short: "Feed stored months, archived ones too, to the search and group file indexes",
		Args:  cobra.NoArgs,
	}
	from := reindex.Flags().String("from", "", "first month (default: the oldest)")
	to := reindex.Flags().String("to", "", "last month (default: the newest)")
	out := withJSON(reindex)
	reindex.RunE = func(cmd *cobra.Command, _ []string) error {
		j, err := g.admin().Reindex(cmd.Context(), *from, *to)
		if err == nil {
			j, err = g.admin().Follow(cmd.Context(), j, followInterval, progressPrinter(cmd))
		}
		if err != nil {
			return err
		}
		return out.print(cmd, j, func(w io.Writer) { jobDone(w, j) })
	}
	cmd.AddCommand(reindex)
	return cmd
}

// runMonthJob starts an operation on a month and follows it to its end.
func runMonthJob(cmd *cobra.Command, g *globals, op, month string) (adminapi.Job, error) {
	j, err := g.admin().MonthOp(cmd.Context(), op, month)
	if err != nil {
		return j, err
	}
	return g.admin().Follow(cmd.Context(), j, followInterval, progressPrinter(cmd))
}

// progressPrinter writes a job's progress to stderr, one line per change: the phase, topics
// done of the total with their rate and ETA (rows when the phase counts no topics).
func progressPrinter(cmd *cobra.Command) func(adminapi.Job) {
	m := progress.New(progress.DefaultWindow)
	return func(j adminapi.Job) {
		if j.Progress.Phase == "" {
			return
		}
		fmt.Fprintln(cmd.ErrOrStderr(), jobLine(m, time.Now(), j))
	}
}

func jobLine(m *progress.Meter, now time.Time, j adminapi.Job) string {
	p := j.Progress
	line := j.Op + " " + j.Target + ": "
	if p.TopicsTotal > 0 {
		m.Observe(now, p.Phase, int64(p.TopicsDone), int64(p.TopicsTotal))
		line += m.Line("topics") + ", " + progress.Count(p.Rows) + " rows"
	} else {
		m.Observe(now, p.Phase, p.Rows, 0)
		line += m.Line("rows")
	}
	if p.Chunks > 0 {
		line += fmt.Sprintf(", %d chunks", p.Chunks)
	}
	return line
}

// jobDone says how a job ended. Its result is for --json (archive check reads its own).
func jobDone(w io.Writer, j adminapi.Job) {
	took := time.Duration(j.FinishedAt-j.StartedAt) * time.Millisecond
	fmt.Fprintf(w, "%s %s: %s in %s (%s rows)\n", j.Op, j.Target, j.State, took, progress.Count(j.Progress.Rows))
}

// checkReport says whether the month can be archived, and what to fix if not.
func checkReport(w io.Writer, raw json.RawMessage) {
	var r struct {
		Month    string   `json:"month"`
		State    string   `json:"state"`
		Topics   int      `json:"topics"`
		Rows     int64    `json:"rows"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		fmt.Fprintf(w, "unreadable check report (see --json): %v\n", err)
		return
	}
	fmt.Fprintf(w, "month %s (%s): %d topics, %s rows", r.Month, r.State, r.Topics, progress.Count(r.Rows))
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, ": ready to archive")
		return
	}
	fmt.Fprintf(w, ": %d problems, not archivable until fixed:\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}

// summaryTopics is how many topics a manifest summary lists, the largest first.
const summaryTopics = 10

func fullFlag(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("full", false, "list every topic of the manifest, not only the largest")
}

// manifestTable prints a manifest: its totals and the largest topics, or every topic with
// full (a month may hold hundreds of thousands).
func manifestTable(w io.Writer, m adminapi.Manifest, full bool) {
	fmt.Fprintf(w, "month %s archived %s: %s rows, %s topics, %s chunks, %s bytes\n", m.Month,
		time.UnixMilli(m.CreatedAt).UTC().Format(time.RFC3339), progress.Count(m.Rows), progress.Count(int64(len(m.Topics))),
		progress.Count(int64(m.Chunks)), progress.Count(m.Bytes))
	topics := slices.Clone(m.Topics)
	if !full {
		slices.SortStableFunc(topics, func(a, b adminapi.ManifestTopic) int { return cmp.Compare(b.Count, a.Count) })
		topics = topics[:min(len(topics), summaryTopics)]
		if len(topics) < len(m.Topics) {
			fmt.Fprintf(w, "largest %d topics (--full lists all %d):\n", len(topics), len(m.Topics))
		}
	}
	rows := make([][]string, len(topics))
	for i, t := range topics {
		rows[i] = []string{t.Topic, strconv.FormatInt(t.MinSeq, 10), strconv.FormatInt(t.MaxSeq, 10), strconv.FormatInt(t.Count, 10), strconv.Itoa(t.Chunks)}
	}
	table(w, []string{"TOPIC", "MIN_SEQ", "MAX_SEQ", "ROWS", "CHUNKS"}, rows)
}

// planTable prints a retention plan (the plan or a run's result).
func planTable(w io.Writer, raw json.RawMessage) {
	var plan struct {
		Policy struct {
			Keep  int `json:"keep_online_months"`
			Purge int `json:"purge_after_months"`
		} `json:"policy"`
		Active string `json:"active_month"`
		Steps  []struct {
			Month   string `json:"month"`
			State   string `json:"state"`
			Age     int    `json:"age"`
			Action  string `json:"action"`
			Outcome string `json:"outcome"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		fmt.Fprintf(w, "%s\n", raw)
		return
	}
	fmt.Fprintf(w, "active month %s; keep %d months online, purge after %d (0: never)\n", plan.Active, plan.Policy.Keep, plan.Policy.Purge)
	rows := make([][]string, len(plan.Steps))
	for i, s := range plan.Steps {
		outcome := s.Outcome
		if outcome == "" {
			outcome = "-"
		}
		rows[i] = []string{s.Month, s.State, strconv.Itoa(s.Age), s.Action, outcome}
	}
	table(w, []string{"MONTH", "STATE", "AGE", "ACTION", "OUTCOME"}, rows)
}
