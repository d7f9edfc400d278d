package http

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
)

// NewMetricsOnly builds a listener serving only GET /metrics (http.metrics_addr), so a scraper
// on a private network reaches the metrics and nothing else of the HTTP API. Start and Stop
// are the API server's.
func NewMetricsOnly(addr string, metrics http.Handler, log *slog.Logger) *Server {
	s := &Server{cfg: Config{Addr: addr}, log: log}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.GET("/metrics", echo.WrapHandler(metrics))
	s.echo = e
	return s
}
