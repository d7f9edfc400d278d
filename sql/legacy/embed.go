// Package legacy embeds the shape of the legacy single table (schema.sql), for the test data
// generator; the tenant migrations never create it.
package legacy

import _ "embed"

// Schema creates im_group_messages if it does not exist.
//
//go:embed schema.sql
var Schema string
