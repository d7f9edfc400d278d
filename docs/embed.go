// Package docs embeds the repository's documentation, so the server serves the checked-in
// files themselves: the OpenAPI document of the client and admin HTTP APIs (GET /openapi.yaml)
// and the Markdown guides (GET /docs/), which the page at / links for a newcomer's browser.
package docs

import "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// Pages are the Markdown documents of docs/, at the root.
//
//go:embed *.md
var Pages embed.FS
