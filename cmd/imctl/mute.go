package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newMuteCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "mute", Short: "Mute a whole group or one member"}

	all := &cobra.Command{
		Use:   "all GROUP [--off]",
		Short: "Mute everyone in a group but its owner and admins",
		Args:  cobra.ExactArgs(1),
	}
	off := all.Flags().Bool("off", false, "unmute the group")
	allOut := withJSON(all)
	all.RunE = func(cmd *cobra.Command, args []string) error {
		group, err := parseID("group id", args[0])
		if err != nil {
			return err
		}
		if err := g.admin().MuteAll(cmd.Context(), group, !*off); err != nil {
			return err
		}
		return allOut.print(cmd, map[string]any{"group_id": group, "mute_all": !*off}, func(w io.Writer) {
			if *off {
				fmt.Fprintf(w, "group %d unmuted\n", group)
				return
			}
			fmt.Fprintf(w, "group %d muted (owner and admins still speak)\n", group)
		})
	}

	member := &cobra.Command{
		Use:   "member GROUP USER --for DURATION",
		Short: "Mute a member for a while (--for 0 unmutes)",
		Args:  cobra.ExactArgs(2),
	}
	duration := member.Flags().Duration("for", 0, "how long, e.g. 10m or 24h; 0 unmutes")
	_ = member.MarkFlagRequired("for")
	memberOut := withJSON(member)
	member.RunE = func(cmd *cobra.Command, args []string) error {
		group, err := parseID("group id", args[0])
		if err != nil {
			return err
		}
		user, err := parseID("user id", args[1])
		if err != nil {
			return err
		}
		if *duration < 0 {
			return fmt.Errorf("--for must not be negative")
		}
		if err := g.admin().MuteMember(cmd.Context(), group, user, *duration); err != nil {
			return err
		}
		return memberOut.print(cmd, map[string]any{"group_id": group, "user_id": user, "duration_seconds": int64(duration.Seconds())}, func(w io.Writer) {
			if *duration == 0 {
				fmt.Fprintf(w, "%d unmuted in group %d\n", user, group)
				return
			}
			fmt.Fprintf(w, "%d muted in group %d for %s\n", user, group, *duration)
		})
	}
	cmd.AddCommand(all, member)
	return cmd
}
