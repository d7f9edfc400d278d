// Package client is the Go client of imd's frame protocol (docs/PROTOCOL.md),
// in a module that needs nothing of the server (clients/go/README.md):
//
//	go get github.com/imdhq/imd/clients/go/client@latest
//
// It has two layers. Conn is one connection: Dial it (TCP, TLS, TCP with a
// PROXY header, or WebSocket when Options.Addr is a ws:// or wss:// URL),
// then call Auth, Send, History, SyncMessages, MarkRead, Dialogs or the
// generic Request and RequestStream, and read server pushes from Pushes. imd's end-to-end tests
// and its load generator use Conn directly.
//
// Client is what an app wants: a Conn that heals itself. Connect it with a
// Config; it heartbeats so an idle connection is not closed, reconnects with
// backoff when the connection or the server goes, resends a send that got no
// SEND_ACK with the same client_msg_id (the server stores it once), and after
// every reconnect runs the two-level sync — SYNC_INBOX for the conversations
// that changed, SYNC_MESSAGES for each from the last seq the app has — so the
// messages missed meanwhile arrive on Events, marked Replayed, each once.
// State and Config.Resume carry that position across runs of the app.
package client
