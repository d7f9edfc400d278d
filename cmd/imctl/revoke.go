package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

func newRevokeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "revoke", Short: "Revoke client tokens"}

	token := &cobra.Command{
		Use:   "token TOKEN",
		Short: "Revoke one token",
		Args:  cobra.ExactArgs(1),
	}
	tokenOut := withJSON(token)
	token.RunE = func(cmd *cobra.Command, args []string) error {
		if err := g.admin().RevokeToken(cmd.Context(), args[0]); err != nil {
			return err
		}
		return tokenOut.print(cmd, map[string]string{"revoked": "token"}, func(w io.Writer) {
			fmt.Fprintln(w, "token revoked")
		})
	}

	user := &cobra.Command{
		Use:   "user ID",
		Short: "Revoke every token of a user issued so far (new tokens work)",
		Args:  cobra.ExactArgs(1),
	}
	userOut := withJSON(user)
	user.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := parseID("user id", args[0])
		if err != nil {
			return err
		}
		before, err := g.admin().RevokeUser(cmd.Context(), id)
		if err != nil {
			return err
		}
		return userOut.print(cmd, map[string]any{"revoked": "user", "user_id": id, "issued_before": before}, func(w io.Writer) {
			fmt.Fprintf(w, "tokens of %d issued before %s revoked\n", id, time.UnixMilli(before).UTC().Format(time.RFC3339))
		})
	}
	cmd.AddCommand(token, user)
	return cmd
}
