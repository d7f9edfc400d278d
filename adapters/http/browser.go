package http

import (
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Browser is what the listener serves to browsers besides the API (PROTOCOL §7). Each part is
// left out when nil.
type Browser struct {
	// WebSocket serves GET /ws: the frame protocol over WebSocket.
	WebSocket http.Handler
	// SDK is the JavaScript SDK's files, served under /sdk/ (/sdk/imd.js).
	SDK fs.FS
	// Chat is the web chat's files, served under /chat/; it loads the SDK from /sdk/.
	Chat fs.FS
}

func (s *Server) browserRoutes(e *echo.Echo) {
	b := s.d.Browser
	if b.WebSocket != nil {
		e.GET("/ws", echo.WrapHandler(b.WebSocket))
	}
	if b.SDK != nil {
		e.GET("/sdk/*", staticFiles("/sdk/", b.SDK, "default-src 'none'"))
	}
	if b.Chat != nil {
		e.GET("/chat", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/chat/") })
		e.GET("/chat/*", staticFiles("/chat/", b.Chat, chatPolicy))
	}
}

// chatPolicy is the web chat's Content-Security-Policy (issue 33, DESIGN §12): its own
// scripts and styles only, no inline code, no plugin, no frame around it, no form posting
// elsewhere, and connections only to its own origin — 'self' covers the same host's ws: and
// wss: (CSP Level 3), so the token it sends in AUTH can reach no other server. No sink may
// take a string as HTML or code (Trusted Types), so a message shown by mistake through one
// throws instead of running.
const chatPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// staticFiles serves files under prefix with the given Content-Security-Policy.
func staticFiles(prefix string, files fs.FS, csp string) echo.HandlerFunc {
	static := http.StripPrefix(prefix, http.FileServerFS(files))
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		// No other window keeps a handle on the page, nor it on them.
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		// Module scripts may be imported by pages of other origins (an app using the SDK).
		if prefix == "/sdk/" {
			h.Set("Access-Control-Allow-Origin", "*")
		}
		static.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
