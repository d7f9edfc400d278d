package http

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"
)

// pprofRoutes serves Go's runtime profiles (net/http/pprof) under /debug/pprof/, behind the
// admin key: a profile reveals code paths and timings, and taking one costs CPU. CPU and trace
// profiles run for ?seconds=N, which must stay under the server's write timeout.
func (s *Server) pprofRoutes(e *echo.Echo) {
	g := e.Group("/debug/pprof", s.requireAdminKey)
	g.GET("/", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
	g.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.GET("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.POST("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	// The named profiles (heap, allocs, goroutine, block, mutex, threadcreate); Index serves
	// each from the last element of the path.
	g.GET("/:name", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
}
