// Package docs embeds the OpenAPI document of the client and admin HTTP APIs, so the server
// serves the checked-in file itself (GET /openapi.yaml).
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
