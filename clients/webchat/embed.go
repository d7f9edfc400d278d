// Package webchat embeds the small web chat served under /chat/, built on the JavaScript SDK.
package webchat

import "embed"

// Files are the chat's page, script and styles, at the root.
//
//go:embed index.html app.js style.css
var Files embed.FS
