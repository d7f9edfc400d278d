// Package schema embeds the tenant-database migrations (golang-migrate format), so the server
// provisions a tenant without files on disk.
package schema

import "embed"

// FS holds NNNN_name.up.sql / NNNN_name.down.sql.
//
//go:embed *.sql
var FS embed.FS
