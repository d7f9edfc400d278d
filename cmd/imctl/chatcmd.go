package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/cmd/imctl/chat"
	"github.com/imdhq/imd/core/domain/topic"
)

func newChatCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chat (--token T | --user ID) (--topic grp_1 | --to USER)",
		Short: "Chat interactively over the frame protocol",
		Long: `Connects over TCP (or WebSocket: --tcp wss://api.example.com/ws), authenticates,
prints incoming messages as "[seq] user: text" and sends each typed line as a text
message. It heartbeats while idle; when the connection or the server goes, it
reconnects with backoff, resends what was not acknowledged and prints the messages
it missed. Try it in two terminals:

  imctl user create 1; imctl user create 2; imctl friend 1 2
  imctl chat --user 1 --to 2      # terminal 1
  imctl chat --user 2 --to 1      # terminal 2

--user mints a token through the admin API; --token uses one you have.

` + chat.Help,
		Args: cobra.NoArgs,
	}
	token := cmd.Flags().String("token", "", "client token (see `imctl token`)")
	userID := cmd.Flags().Int64("user", 0, "mint a token for this user through the admin API")
	device := cmd.Flags().Uint64("device", 1, "device id; a second AUTH of the same user and device replaces the first")
	topicName := cmd.Flags().String("topic", "", "conversation topic, e.g. grp_1")
	to := cmd.Flags().Int64("to", 0, "talk P2P with this user (you must be friends)")
	verbose := cmd.Flags().Bool("verbose", false, "log the client's connection work (reconnects, catch-up) to stderr")
	heartbeat := cmd.Flags().Duration("heartbeat", client.DefaultHeartbeat, "time between heartbeats; keep it below the server's idle timeout")
	cmd.MarkFlagsMutuallyExclusive("token", "user")
	cmd.MarkFlagsOneRequired("token", "user")
	cmd.MarkFlagsMutuallyExclusive("topic", "to")
	cmd.MarkFlagsOneRequired("topic", "to")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		tokens := client.StaticToken(*token)
		if *userID != 0 {
			// A fresh token at every (re)connect: a chat left open outlives any one token.
			tokens = func(ctx context.Context) (string, error) { return g.admin().Token(ctx, *userID, 0) }
		}
		cfg := client.Config{Dial: client.Dialer(g.dialOptions()), Token: tokens, DeviceID: *device, Heartbeat: *heartbeat}
		if *verbose {
			cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		c, err := client.Connect(ctx, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		me := c.Me()
		name := *topicName
		if *to != 0 {
			name = topic.ForPair(me.UserID, *to)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "user %d (tenant %s, device %d) in %s — /help for commands\n", me.UserID, me.TenantID, me.DeviceID, name)
		return chat.NewSession(c, name, cmd.OutOrStdout(), rand.Text).Run(ctx, cmd.InOrStdin())
	}
	return cmd
}
