package main

import (
	"log/slog"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/adapters/websocket"
	jssdk "github.com/imdhq/imd/clients/js"
	"github.com/imdhq/imd/clients/webchat"
	"github.com/imdhq/imd/ports"

	"go.uber.org/fx"
)

// Browser provides what the HTTP listener serves browsers (PROTOCOL §7): the WebSocket
// endpoint, which hands its connections to the TCP listener's dispatcher so both transports
// share one session registry, the JavaScript SDK and the web chat.
func Browser() fx.Option {
	return fx.Provide(newWebSocket, newBrowser)
}

func newWebSocket(cfg config.Config, tcp *tcpserver.Server, m ports.Metrics, log *slog.Logger) *websocket.Endpoint {
	w := cfg.HTTP.WebSocket
	return websocket.New(websocket.Config{
		AllowedOrigins: w.AllowedOrigins, IdleTimeout: w.IdleTimeout, WriteTimeout: w.WriteTimeout,
		OutboundFrames: cfg.TCP.OutboundLimit,
	}, tcp.Dispatcher(), m, log)
}

func newBrowser(ws *websocket.Endpoint) httpapi.Browser {
	return httpapi.Browser{WebSocket: ws, SDK: jssdk.Files, Chat: webchat.Files}
}
