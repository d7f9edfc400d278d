package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/imdhq/imd/cmd/imctl/adminapi"
)

func newTenantsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenants",
		Short: "List the tenants the server serves (configured and provisioned)",
		Args:  cobra.NoArgs,
	}
	out := withJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		list, err := g.admin().Tenants(cmd.Context())
		if err != nil {
			return err
		}
		if list == nil {
			list = []adminapi.Tenant{}
		}
		return out.print(cmd, map[string]any{"tenants": list}, func(w io.Writer) { tenantsTable(w, list) })
	}

	create := &cobra.Command{
		Use:   "create NAME [--database DB] [--dsn DSN]",
		Short: "Provision a tenant: database, schema, month tables and workers, on every node",
		Args:  cobra.ExactArgs(1),
	}
	database := create.Flags().String("database", "", "database name (default imd_NAME)")
	dsn := create.Flags().String("dsn", "", "go-sql-driver DSN of the MySQL server to hold it (default the server's mysql.dsn)")
	createOut := withJSON(create)
	create.RunE = func(cmd *cobra.Command, args []string) error {
		t, err := g.admin().ProvisionTenant(cmd.Context(), args[0], *database, *dsn)
		if err != nil {
			return err
		}
		return createOut.print(cmd, t, func(w io.Writer) {
			fmt.Fprintf(w, "tenant %s is served, database %s\n", t.Tenant, t.Database)
		})
	}
	cmd.AddCommand(create)
	return cmd
}

func tenantsTable(w io.Writer, list []adminapi.Tenant) {
	rows := make([][]string, len(list))
	for i, t := range list {
		created := "-"
		if t.CreatedAt > 0 {
			created = time.UnixMilli(t.CreatedAt).UTC().Format(time.RFC3339)
		}
		rows[i] = []string{t.Tenant, t.Database, t.Source, created}
	}
	table(w, []string{"TENANT", "DATABASE", "SOURCE", "CREATED"}, rows)
}
