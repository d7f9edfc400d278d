package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newBlocksCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "blocks", Short: "Manage blocks (a block stops P2P messages both ways)"}

	list := &cobra.Command{
		Use:   "list USER",
		Short: "List whom a user blocked",
		Args:  cobra.ExactArgs(1),
	}
	listOut := withJSON(list)
	list.RunE = func(cmd *cobra.Command, args []string) error {
		user, err := parseID("user id", args[0])
		if err != nil {
			return err
		}
		ids, err := g.admin().Blocks(cmd.Context(), user)
		if err != nil {
			return err
		}
		if ids == nil {
			ids = []int64{}
		}
		return listOut.print(cmd, map[string]any{"user_id": user, "blocked": ids}, func(w io.Writer) {
			if len(ids) == 0 {
				fmt.Fprintf(w, "%d blocks nobody\n", user)
				return
			}
			for _, id := range ids {
				fmt.Fprintln(w, id)
			}
		})
	}

	change := func(use, short, done string, apply func(cmd *cobra.Command, user, blocked int64) error) *cobra.Command {
		c := &cobra.Command{Use: use + " USER BLOCKED", Short: short, Args: cobra.ExactArgs(2)}
		out := withJSON(c)
		c.RunE = func(cmd *cobra.Command, args []string) error {
			user, err := parseID("user id", args[0])
			if err != nil {
				return err
			}
			blocked, err := parseID("blocked user id", args[1])
			if err != nil {
				return err
			}
			if err := apply(cmd, user, blocked); err != nil {
				return err
			}
			return out.print(cmd, map[string]int64{"user_id": user, "blocked_user_id": blocked}, func(w io.Writer) {
				fmt.Fprintf(w, done+"\n", user, blocked)
			})
		}
		return c
	}
	add := change("add", "Make USER block BLOCKED", "%d blocked %d", func(cmd *cobra.Command, user, blocked int64) error {
		return g.admin().Block(cmd.Context(), user, blocked)
	})
	remove := change("remove", "Lift USER's block of BLOCKED", "%d unblocked %d", func(cmd *cobra.Command, user, blocked int64) error {
		return g.admin().Unblock(cmd.Context(), user, blocked)
	})
	cmd.AddCommand(list, add, remove)
	return cmd
}
