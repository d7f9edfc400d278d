package http

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/docs"
)

// The page at / is for the newcomer who opens the listener in a browser: links to what this
// listener serves. API clients keep the contract's JSON 404 there (PROTOCOL §5), so only a
// request that asks for HTML gets the page.

//go:embed home/index.html
var homeTemplate embed.FS

// homeLinks are the optional parts the page links; a part the listener leaves out is not
// linked, so every link on the page answers.
type homeLinks struct {
	// Console is false where the console is on the admin listener (Config.AdminAddr).
	Chat, SDK, Metrics, Console bool
}

// renderHome fills the page once: it changes only with the listener's parts.
func renderHome(links homeLinks) []byte {
	t := template.Must(template.ParseFS(homeTemplate, "home/index.html")) // embedded: it parses
	var b bytes.Buffer
	if err := t.Execute(&b, links); err != nil {
		panic("http: home page: " + err.Error()) // a template fault the tests catch
	}
	return b.Bytes()
}

func (s *Server) homeRoutes(e *echo.Echo) {
	page := renderHome(homeLinks{Chat: s.d.Browser.Chat != nil, SDK: s.d.Browser.SDK != nil, Metrics: s.d.Metrics != nil, Console: s.admin == s.echo})
	e.GET("/", func(c echo.Context) error {
		if !strings.Contains(c.Request().Header.Get(echo.HeaderAccept), echo.MIMETextHTML) {
			return apperr.New(apperr.NotFound, "no such endpoint")
		}
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		return c.HTMLBlob(http.StatusOK, page)
	})
	e.GET("/docs", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/docs/") })
	pages := staticFiles("/docs/", docs.Pages, "default-src 'none'")
	e.GET("/docs/*", func(c echo.Context) error {
		// Markdown is shown as text: no browser renders text/markdown, several download it.
		if strings.HasSuffix(c.Request().URL.Path, ".md") {
			c.Response().Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
		}
		return pages(c)
	})
}
