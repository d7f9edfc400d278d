// Package jssdk embeds the JavaScript SDK (imd.js, its TypeScript types and package.json) for
// the HTTP listener to serve under /sdk/; the files themselves are the SDK, used as they are.
package jssdk

import "embed"

// Files are the SDK's files, at the root.
//
//go:embed imd.js imd.d.ts package.json
var Files embed.FS
