// Package registry embeds the schema of the tenant registry database, so a node creates it
// without files on disk.
package registry

import _ "embed"

// Schema creates the registry tables if missing: several statements, run on a connection
// that allows them.
//
//go:embed schema.sql
var Schema string
