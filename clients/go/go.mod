module github.com/imdhq/imd/clients/go

go 1.26.8

require (
	github.com/coder/websocket v1.8.15
	github.com/go-json-experiment/json v1.27.2
)
