// Package wire holds the command numbers, result codes and JSON bodies of
// PROTOCOL.md §3–§5. The server marshals the same types the Go SDK does, so
// both sides agree on every field name by construction.
package wire

// Command numbers (PROTOCOL.md §3).
const (
	CmdAuth               uint16 = 1
	CmdHeartbeat          uint16 = 2
	CmdGenerateMsgID      uint16 = 3
	CmdSendMessage        uint16 = 4
	CmdSendAck            uint16 = 5
	CmdMessage            uint16 = 6
	CmdPushAck            uint16 = 7
	CmdReadMessage        uint16 = 8
	CmdRecallMessage      uint16 = 9
	CmdSyncInbox          uint16 = 10
	CmdSyncInboxFinish    uint16 = 11
	CmdSyncMessages       uint16 = 12
	CmdSyncMessagesFinish uint16 = 13
	CmdKick               uint16 = 14
	CmdEditMessage        uint16 = 15
	CmdDeleteMessages     uint16 = 16
	CmdEvent              uint16 = 17
	CmdGetHistory         uint16 = 18
	CmdQueryPresence      uint16 = 19
	CmdPresence           uint16 = 20
	CmdTyping             uint16 = 21
	CmdTypingNotice       uint16 = 22
	CmdSettings           uint16 = 23
)

// ResponseCommand is the command that ends the answer to req, successful or
// not: SEND_ACK for SEND_MESSAGE, the FINISH command for the two sync
// commands, req itself otherwise.
func ResponseCommand(req uint16) uint16 {
	switch req {
	case CmdSendMessage:
		return CmdSendAck
	case CmdSyncInbox:
		return CmdSyncInboxFinish
	case CmdSyncMessages:
		return CmdSyncMessagesFinish
	default:
		return req
	}
}

// IsStream reports whether req is answered by zero or more pages carrying req
// itself before its ResponseCommand.
func IsStream(req uint16) bool {
	return req == CmdSyncInbox || req == CmdSyncMessages
}

// Result codes (PROTOCOL.md §5).
const (
	CodeOK              = 0
	CodeInvalidArgument = 40001
	CodeUnauthenticated = 40101
	CodeForbidden       = 40301
	CodeNotFound        = 40401
	CodeConflict        = 40901
	CodeTooLarge        = 41301
	CodeRateLimited     = 42901
	CodeInternal        = 50001
	CodeBusy            = 50301
)
