package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/chat"
)

// maxCell bounds a table cell, so one long message keeps the table readable.
const maxCell = 60

// printer writes a command's result as a table or, with --json, as JSON.
type printer struct {
	w    io.Writer
	json *bool
}

// withJSON adds --json to cmd and returns the printer that honours it.
func withJSON(cmd *cobra.Command) *printer {
	p := &printer{json: new(bool)}
	cmd.Flags().BoolVar(p.json, "json", false, "print the result as JSON")
	return p
}

// print writes v as indented JSON with --json, else calls human.
func (p *printer) print(cmd *cobra.Command, v any, human func(w io.Writer)) error {
	w := cmd.OutOrStdout()
	if *p.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(w)
	return nil
}

// table writes aligned columns.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func messagesTable(w io.Writer, msgs []wire.Message) {
	if len(msgs) == 0 {
		fmt.Fprintln(w, "(no messages)")
		return
	}
	var rows [][]string
	for _, m := range msgs {
		rows = append(rows, []string{
			fmt.Sprint(m.Seq), fmt.Sprint(m.MsgID), fmt.Sprint(m.From), m.Type, m.Status,
			millisTime(m.CreatedAt), clip(chat.Text(m)),
		})
	}
	table(w, []string{"SEQ", "MSG_ID", "FROM", "TYPE", "STATUS", "CREATED", "CONTENT"}, rows)
}

func shardsTable(w io.Writer, shards []adminapi.Shard) {
	if len(shards) == 0 {
		fmt.Fprintln(w, "(no month tables)")
		return
	}
	var rows [][]string
	for _, sh := range shards {
		name := sh.Table
		if sh.TableDropped {
			name = "(dropped: in the archive)"
		}
		rows = append(rows, []string{sh.Month, name, sh.Status, fmt.Sprint(sh.RowCount),
			millisTime(sh.MinCreatedAt), millisTime(sh.MaxCreatedAt), millisTime(sh.UpdatedAt)})
	}
	table(w, []string{"MONTH", "TABLE", "STATUS", "ROWS", "FIRST_MESSAGE", "LAST_MESSAGE", "UPDATED"}, rows)
}

func segmentsTable(w io.Writer, segs []adminapi.Segment) {
	if len(segs) == 0 {
		fmt.Fprintln(w, "(no segments: the topic has no stored messages)")
		return
	}
	var rows [][]string
	for _, s := range segs {
		rows = append(rows, []string{s.Month, fmt.Sprint(s.MinSeq), fmt.Sprint(s.MaxSeq), fmt.Sprint(s.Count)})
	}
	table(w, []string{"MONTH", "MIN_SEQ", "MAX_SEQ", "COUNT"}, rows)
}

// millisTime renders Unix milliseconds in local time; 0 means none.
func millisTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05.000")
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if utf8.RuneCountInString(s) <= maxCell {
		return s
	}
	r := []rune(s)
	return string(r[:maxCell-1]) + "…"
}
