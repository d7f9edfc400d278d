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
		// The chat connects back to this host's /ws, whichever scheme the page came by.
		e.GET("/chat/*", staticFiles("/chat/", b.Chat,
			"default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"))
	}
}

// staticFiles serves files under prefix with the given Content-Security-Policy.
func staticFiles(prefix string, files fs.FS, csp string) echo.HandlerFunc {
	static := http.StripPrefix(prefix, http.FileServerFS(files))
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		// Module scripts may be imported by pages of other origins (an app using the SDK).
		if prefix == "/sdk/" {
			h.Set("Access-Control-Allow-Origin", "*")
		}
		static.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
