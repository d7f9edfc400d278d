// Package protocol is the server's side of the frame protocol that TCP and WebSocket
// share: the conversions between the wire bodies of the SDK's package wire
// (clients/go/wire) and core's types, the transports' defaults, and the drain that tells a
// stopping node's clients to reconnect a few at a time (Drain). Its subpackages
// dispatch commands and keep sessions.
package protocol
