package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
)

func newUserCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Manage users"}
	create := &cobra.Command{
		Use:   "create ID",
		Short: "Create a user",
		Args:  cobra.ExactArgs(1),
	}
	nickname := create.Flags().String("nickname", "", "display name")
	out := withJSON(create)
	create.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := parseID("user id", args[0])
		if err != nil {
			return err
		}
		if err := g.admin().CreateUser(cmd.Context(), id, *nickname); err != nil {
			return err
		}
		created := struct {
			UserID   int64  `json:"user_id"`
			Nickname string `json:"nickname,omitempty"`
		}{id, *nickname}
		return out.print(cmd, created, func(w io.Writer) {
			fmt.Fprintf(w, "created user %d\n", id)
		})
	}
	cmd.AddCommand(create,
		userStatusCmd(g, "status", "Show a user's status (active, disabled or deleted)",
			func(ctx context.Context, c *adminapi.Client, id int64) (adminapi.UserStatus, error) {
				return c.UserStatus(ctx, id)
			}),
		userStatusCmd(g, "disable", "Disable a user: its tokens stop working, its connections get KICK disabled",
			func(ctx context.Context, c *adminapi.Client, id int64) (adminapi.UserStatus, error) {
				return c.SetUserStatus(ctx, id, "disabled")
			}),
		userStatusCmd(g, "enable", "Enable a disabled user: its tokens work again",
			func(ctx context.Context, c *adminapi.Client, id int64) (adminapi.UserStatus, error) {
				return c.SetUserStatus(ctx, id, "active")
			}),
		userStatusCmd(g, "delete", "Delete a user for good: it leaves its groups and friendships, its messages stay",
			func(ctx context.Context, c *adminapi.Client, id int64) (adminapi.UserStatus, error) {
				return c.DeleteUser(ctx, id)
			}),
	)
	return cmd
}

// userStatusCmd is a `user VERB ID` command that calls the admin API and prints the user's
// status after the call.
func userStatusCmd(g *globals, verb, short string, call func(context.Context, *adminapi.Client, int64) (adminapi.UserStatus, error)) *cobra.Command {
	cmd := &cobra.Command{Use: verb + " ID", Short: short, Args: cobra.ExactArgs(1)}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := parseID("user id", args[0])
		if err != nil {
			return err
		}
		st, err := call(cmd.Context(), g.admin(), id)
		if err != nil {
			return err
		}
		return out.print(cmd, st, func(w io.Writer) {
			fmt.Fprintf(w, "user %d is %s\n", st.UserID, st.Status)
		})
	}
	return cmd
}

func newTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token ID",
		Short: "Mint a client token for a user (prints the bare token)",
		Args:  cobra.ExactArgs(1),
	}
	ttl := cmd.Flags().Duration("ttl", 0, "lifetime, e.g. 24h (default: the server's)")
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := parseID("user id", args[0])
		if err != nil {
			return err
		}
		tok, err := g.admin().Token(cmd.Context(), id, *ttl)
		if err != nil {
			return err
		}
		return out.print(cmd, map[string]any{"user_id": id, "token": tok}, func(w io.Writer) {
			fmt.Fprintln(w, tok)
		})
	}
	return cmd
}

func newFriendCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "friend A B",
		Short: "Make two users friends, so they can talk P2P",
		Args:  cobra.ExactArgs(2),
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		a, err := parseID("user A", args[0])
		if err != nil {
			return err
		}
		b, err := parseID("user B", args[1])
		if err != nil {
			return err
		}
		if err := g.admin().Friend(cmd.Context(), a, b); err != nil {
			return err
		}
		return out.print(cmd, map[string]any{"user_a": a, "user_b": b}, func(w io.Writer) {
			fmt.Fprintf(w, "%d and %d are friends\n", a, b)
		})
	}
	return cmd
}

func newGroupCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "group", Short: "Manage groups"}

	create := &cobra.Command{
		Use:   "create ID --owner O [--members 1,2,3]",
		Short: "Create a group (the owner is a member)",
		Args:  cobra.ExactArgs(1),
	}
	owner := create.Flags().Int64("owner", 0, "owner's user id")
	members := create.Flags().String("members", "", "member user ids, comma-separated")
	_ = create.MarkFlagRequired("owner")
	createOut := withJSON(create)
	create.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := parseID("group id", args[0])
		if err != nil {
			return err
		}
		ids, err := parseIDs(*members)
		if err != nil {
			return err
		}
		grp, err := g.admin().CreateGroup(cmd.Context(), id, *owner, ids)
		if err != nil {
			return err
		}
		return createOut.print(cmd, grp, func(w io.Writer) {
			table(w, []string{"GROUP_ID", "TOPIC", "CONVERSATION_ID"}, [][]string{{fmt.Sprint(grp.GroupID), grp.Topic, fmt.Sprint(grp.ConversationID)}})
		})
	}

	add := &cobra.Command{
		Use:   "add ID USER,USER,…",
		Short: "Add members to a group",
		Args:  cobra.ExactArgs(2),
	}
	addOut := withJSON(add)
	add.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := parseID("group id", args[0])
		if err != nil {
			return err
		}
		ids, err := parseIDs(args[1])
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("no user ids given")
		}
		if err := g.admin().AddMembers(cmd.Context(), id, ids); err != nil {
			return err
		}
		return addOut.print(cmd, map[string]any{"group_id": id, "user_ids": ids}, func(w io.Writer) {
			fmt.Fprintf(w, "added %d members to group %d\n", len(ids), id)
		})
	}
	cmd.AddCommand(create, add, newGroupTransferCmd(g))
	return cmd
}

func newShardsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shards",
		Short: "List the month tables of the tenant (the shard catalog)",
		Args:  cobra.NoArgs,
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		shards, err := g.admin().Shards(cmd.Context())
		if err != nil {
			return err
		}
		if shards == nil {
			shards = []adminapi.Shard{}
		}
		return out.print(cmd, map[string]any{"shards": shards}, func(w io.Writer) { shardsTable(w, shards) })
	}

	advance := &cobra.Command{
		Use:   "advance YYYYMM",
		Short: "Prepare a month's table and move the active month forward to it",
		Args:  cobra.ExactArgs(1),
	}
	advOut := withJSON(advance)
	advance.RunE = func(cmd *cobra.Command, args []string) error {
		active, err := g.admin().Advance(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return advOut.print(cmd, map[string]string{"active_month": active}, func(w io.Writer) {
			fmt.Fprintf(w, "active month: %s\n", active)
		})
	}
	cmd.AddCommand(advance)
	return cmd
}

func newRouteCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "route", Short: "Manage topic routes"}
	rebuild := &cobra.Command{
		Use:   "rebuild TOPIC",
		Short: "Rewrite a topic's Redis route from the MySQL mirror",
		Args:  cobra.ExactArgs(1),
	}
	out := withJSON(rebuild)
	rebuild.RunE = func(cmd *cobra.Command, args []string) error {
		rt, err := g.admin().RebuildRoute(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return out.print(cmd, rt, func(w io.Writer) {
			fmt.Fprintf(w, "rebuilt the route of %s\n", rt.Topic)
			segmentsTable(w, rt.Segments)
		})
	}
	cmd.AddCommand(rebuild)
	return cmd
}

func newMessagesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "messages TOPIC",
		Short: "Page a topic's messages: the newest, --before SEQ (older) or --since SEQ (newer)",
		Args:  cobra.ExactArgs(1),
	}
	before := cmd.Flags().Int64("before", 0, "messages older than this seq, newest first")
	since := cmd.Flags().Int64("since", 0, "messages newer than this seq, oldest first (0: from the first)")
	limit := cmd.Flags().Int("limit", 0, "page size (default: the server's)")
	cmd.MarkFlagsMutuallyExclusive("before", "since")
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		from := adminapi.NoSince
		if cmd.Flags().Changed("since") {
			from = *since
		}
		page, err := g.admin().Messages(cmd.Context(), args[0], *before, from, *limit)
		if err != nil {
			return err
		}
		if page.Messages == nil {
			page.Messages = []wire.Message{}
		}
		return out.print(cmd, page, func(w io.Writer) {
			messagesTable(w, page.Messages)
			if n := len(page.Messages); page.HasMore && n > 0 {
				last := page.Messages[n-1].Seq
				fmt.Fprintf(w, "(more: --since %d)\n", last)
			}
		})
	}
	return cmd
}

func newMessageCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "message TOPIC SEQ",
		Short: "Show one message",
		Args:  cobra.ExactArgs(2),
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		seq, err := parseID("seq", args[1])
		if err != nil {
			return err
		}
		m, err := g.admin().Message(cmd.Context(), args[0], seq)
		if err != nil {
			return err
		}
		return out.print(cmd, m, func(w io.Writer) { messagesTable(w, []wire.Message{m}) })
	}
	return cmd
}

// parseID parses a positive id.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive integer", what, s)
	}
	return id, nil
}

// parseIDs parses "1,2,3"; blanks are skipped.
func parseIDs(s string) ([]int64, error) {
	var out []int64
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		id, err := parseID("user id", part)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}
