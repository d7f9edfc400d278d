package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/imdhq/imd/cmd/imctl/adminapi"
)

func newStatsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stats [--from DAY] [--to DAY]",
		Short: "Users, groups, and messages per month table and per UTC day",
		Long: `stats reads the tenant's statistics from the summaries the server keeps (month
catalog, route mirror, daily summary), never by counting month tables. --from and --to
take a date YYYY-MM-DD or a month YYYYMM. Daily counts trail by a few seconds.`,
		Args: cobra.NoArgs,
	}
	from := cmd.Flags().String("from", "", "first day (YYYY-MM-DD) or month (YYYYMM)")
	to := cmd.Flags().String("to", "", "last day (YYYY-MM-DD) or month (YYYYMM)")
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		st, err := g.admin().Stats(cmd.Context(), *from, *to)
		if err != nil {
			return err
		}
		return out.print(cmd, st, func(w io.Writer) { statsTables(w, st) })
	}
	return cmd
}

func statsTables(w io.Writer, st adminapi.Stats) {
	fmt.Fprintf(w, "users %d, groups %d\n\n", st.Users, st.Groups)
	months := make([][]string, len(st.Months))
	for i, m := range st.Months {
		months[i] = []string{m.Month, m.Status, fmt.Sprint(m.Messages), fmt.Sprint(m.GroupTopics), fmt.Sprint(m.P2PTopics)}
	}
	table(w, []string{"MONTH", "STATUS", "MESSAGES", "GROUP_TOPICS", "P2P_TOPICS"}, months)
	fmt.Fprintln(w)
	if len(st.Days) == 0 {
		fmt.Fprintln(w, "(no messages on these days)")
		return
	}
	days := make([][]string, len(st.Days))
	for i, d := range st.Days {
		days[i] = []string{d.Day, fmt.Sprint(d.Messages), fmt.Sprint(d.GroupMessages), fmt.Sprint(d.P2PMessages)}
	}
	table(w, []string{"DAY", "MESSAGES", "GROUP", "P2P"}, days)
}

func newGroupTransferCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transfer GROUP USER",
		Short: "Hand a group over to another member (the owner becomes an admin and may leave)",
		Args:  cobra.ExactArgs(2),
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		group, err := parseID("group id", args[0])
		if err != nil {
			return err
		}
		user, err := parseID("user id", args[1])
		if err != nil {
			return err
		}
		if err := g.admin().TransferOwnership(cmd.Context(), group, user); err != nil {
			return err
		}
		return out.print(cmd, map[string]int64{"group_id": group, "owner": user}, func(w io.Writer) {
			fmt.Fprintf(w, "group %d is owned by %d\n", group, user)
		})
	}
	return cmd
}
