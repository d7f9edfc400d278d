// Package protocol is the server's side of the frame protocol that TCP and WebSocket
// share: the conversions between the wire bodies of the SDK's package wire
// (clients/go/wire) and core's types, and the transports' defaults. Its subpackages
// dispatch commands and keep sessions.
package protocol
