package wire

import (
	"encoding/json"
	"testing"
)

func TestResponseCommand(t *testing.T) {
	tests := []struct {
		req, want uint16
		stream    bool
	}{
		{CmdAuth, CmdAuth, false},
		{CmdHeartbeat, CmdHeartbeat, false},
		{CmdGenerateMsgID, CmdGenerateMsgID, false},
		{CmdSendMessage, CmdSendAck, false},
		{CmdReadMessage, CmdReadMessage, false},
		{CmdRecallMessage, CmdRecallMessage, false},
		{CmdSyncInbox, CmdSyncInboxFinish, true},
		{CmdSyncMessages, CmdSyncMessagesFinish, true},
		{CmdEditMessage, CmdEditMessage, false},
		{CmdDeleteMessages, CmdDeleteMessages, false},
		{CmdGetHistory, CmdGetHistory, false},
		{999, 999, false},
	}
	for _, tt := range tests {
		if got := ResponseCommand(tt.req); got != tt.want {
			t.Errorf("ResponseCommand(%d) = %d, want %d", tt.req, got, tt.want)
		}
		if got := IsStream(tt.req); got != tt.stream {
			t.Errorf("IsStream(%d) = %v, want %v", tt.req, got, tt.stream)
		}
	}
}

func TestCommandNumbers(t *testing.T) {
	// The table of PROTOCOL.md §3, in order.
	cmds := []uint16{CmdAuth, CmdHeartbeat, CmdGenerateMsgID, CmdSendMessage, CmdSendAck, CmdMessage,
		CmdPushAck, CmdReadMessage, CmdRecallMessage, CmdSyncInbox, CmdSyncInboxFinish, CmdSyncMessages,
		CmdSyncMessagesFinish, CmdKick, CmdEditMessage, CmdDeleteMessages, CmdEvent, CmdGetHistory,
		CmdQueryPresence, CmdPresence, CmdTyping, CmdTypingNotice, CmdSettings, CmdReceipt, CmdAddReaction,
		CmdRemoveReaction, CmdGetReactions, CmdPinMessage, CmdUnpinMessage, CmdGetPins, CmdForwardMessage, CmdReadState}
	for i, c := range cmds {
		if int(c) != i+1 {
			t.Errorf("command #%d is %d", i+1, c)
		}
	}
}

func TestJSONFieldNames(t *testing.T) {
	edited := int64(1700000000999)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"AuthRequest", AuthRequest{Token: "t", DeviceID: 18446744073709551615, Platform: "ios"},
			`{"token":"t","device_id":18446744073709551615,"platform":"ios"}`},
		{"Receipt read", Receipt{Topic: "p2p_1_2", ConversationID: 9, UserID: 2, ReadSeq: 5},
			`{"topic":"p2p_1_2","conversation_id":9,"user_id":2,"read_seq":5}`},
		{"Receipt delivered", Receipt{Topic: "p2p_1_2", ConversationID: 9, UserID: 2, DeliveredSeq: 6},
			`{"topic":"p2p_1_2","conversation_id":9,"user_id":2,"delivered_seq":6}`},
		{"ReadState", ReadState{Topic: "grp_7", ConversationID: 9, Seq: 3, Read: 1, Of: 2, Readers: []int64{4}},
			`{"topic":"grp_7","conversation_id":9,"seq":3,"read":1,"of":2,"readers":[4]}`},
		{"AuthRequest without platform", AuthRequest{Token: "t", DeviceID: 1}, `{"token":"t","device_id":1}`},
		{"AuthResponse", AuthResponse{UserID: 9007199254740993, TenantID: "default", DeviceID: 2, ServerTime: 3},
			`{"user_id":9007199254740993,"tenant_id":"default","device_id":2,"server_time":3}`},
		{"HeartbeatResponse", HeartbeatResponse{ServerTime: 5}, `{"server_time":5}`},
		{"GenerateMsgIDResponse", GenerateMsgIDResponse{MsgID: 7}, `{"msg_id":7}`},
		{"SendMessageRequest full", SendMessageRequest{Topic: "grp_1", ConversationID: 2, ToUser: 3, ClientMsgID: "c", MsgID: 4,
			Type: TypeText, Content: json.RawMessage(`{"text":"hi"}`), Mentions: []int64{5}, MentionAll: true, ReplySeq: 6},
			`{"topic":"grp_1","conversation_id":2,"to_user":3,"client_msg_id":"c","msg_id":4,"type":"text","content":{"text":"hi"},"mentions":[5],"mention_all":true,"reply_seq":6}`},
		{"SendMessageRequest minimal", SendMessageRequest{ToUser: 3, ClientMsgID: "c", Type: TypeText, Content: json.RawMessage(`{}`)},
			`{"to_user":3,"client_msg_id":"c","type":"text","content":{}}`},
		{"SendAck", SendAck{MsgID: 1, Seq: 2, Topic: "p2p_1_2", ConversationID: 3, ClientMsgID: "c", ServerTime: 4},
			`{"msg_id":1,"seq":2,"topic":"p2p_1_2","conversation_id":3,"client_msg_id":"c","server_time":4}`},
		{"Message", Message{Topic: "grp_1", ConversationID: 2, Seq: 3, MsgID: 4, From: 5, ClientMsgID: "c", Type: TypeImage,
			Content: json.RawMessage(`{"key":"k"}`), Mentions: []int64{}, ReplySeq: 1, Status: StatusNormal, Version: 1, CreatedAt: 6},
			`{"topic":"grp_1","conversation_id":2,"seq":3,"msg_id":4,"from":5,"client_msg_id":"c","type":"image","content":{"key":"k"},"mentions":[],"mention_all":false,"reply_seq":1,"status":"normal","version":1,"created_at":6}`},
		{"Message edited", Message{Topic: "grp_1", Content: json.RawMessage(`{}`), Status: StatusRecalled, EditedAt: &edited},
			`{"topic":"grp_1","conversation_id":0,"seq":0,"msg_id":0,"from":0,"client_msg_id":"","type":"","content":{},"mentions":null,"mention_all":false,"reply_seq":0,"status":"recalled","version":0,"created_at":0,"edited_at":1700000000999}`},
		{"ReadRequest by seq", ReadRequest{Topic: "grp_1", Seq: 9}, `{"topic":"grp_1","seq":9}`},
		{"ReadRequest by msg_id", ReadRequest{ConversationID: 1, MsgID: 2}, `{"conversation_id":1,"msg_id":2}`},
		{"ReadRequest by last_msg_id", ReadRequest{ConversationID: 1, LastMsgID: 2, PeerID: 3}, `{"conversation_id":1,"last_msg_id":2,"peer_id":3}`},
		{"ReadResponse", ReadResponse{Topic: "grp_1", ConversationID: 1, Seq: 2, MsgID: 3}, `{"topic":"grp_1","conversation_id":1,"seq":2,"msg_id":3}`},
		{"RecallRequest", RecallRequest{Topic: "grp_1", Seq: 2}, `{"topic":"grp_1","seq":2}`},
		{"EditRequest", EditRequest{Topic: "grp_1", Seq: 2, Content: json.RawMessage(`{"text":"x"}`), Version: 3},
			`{"topic":"grp_1","seq":2,"content":{"text":"x"},"version":3}`},
		{"DeleteRequest", DeleteRequest{Topic: "grp_1", Low: 1, Hi: 5}, `{"topic":"grp_1","low":1,"hi":5}`},
		{"SyncInboxRequest", SyncInboxRequest{MailboxSeq: 1, DialogScore: 2, Limit: 3}, `{"mailbox_seq":1,"dialog_score":2,"limit":3}`},
		{"SyncInboxRequest first sync", SyncInboxRequest{}, `{"mailbox_seq":0,"dialog_score":0}`},
		{"SyncInboxPage", SyncInboxPage{
			Dialogs: []Dialog{{Topic: "grp_1", ConversationID: 1, Score: 2, LastSeq: 3, ReadSeq: 1, Unread: 2}},
			Events:  []Event{{"type": json.RawMessage(`"recall"`)}}},
			`{"dialogs":[{"topic":"grp_1","conversation_id":1,"score":2,"last_seq":3,"read_seq":1,"unread":2}],"events":[{"type":"recall"}]}`},
		{"SyncInboxFinish", SyncInboxFinish{MailboxSeq: 1, DialogScore: 2, HasMore: true}, `{"mailbox_seq":1,"dialog_score":2,"has_more":true}`},
		{"SyncMessagesRequest", SyncMessagesRequest{Topic: "grp_1", SinceSeq: 0, Limit: 200}, `{"topic":"grp_1","since_seq":0,"limit":200}`},
		{"SyncMessagesPage", SyncMessagesPage{Messages: []Message{}}, `{"messages":[]}`},
		{"SyncMessagesFinish", SyncMessagesFinish{Topic: "grp_1", LastSeq: 9, HasMore: false}, `{"topic":"grp_1","last_seq":9,"has_more":false}`},
		{"Kick", Kick{Reason: KickReasonReplaced}, `{"reason":"replaced"}`},
		{"GetHistoryRequest newest", GetHistoryRequest{Topic: "grp_1"}, `{"topic":"grp_1"}`},
		{"GetHistoryRequest", GetHistoryRequest{Topic: "grp_1", BeforeSeq: 10, Limit: 50}, `{"topic":"grp_1","before_seq":10,"limit":50}`},
		{"GetHistoryResponse", GetHistoryResponse{Messages: []Message{}}, `{"messages":[]}`},
		{"Envelope error", Envelope{Code: CodeNotFound, Msg: "no", RequestID: "12"}, `{"code":40401,"msg":"no","request_id":"12","data":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestOK(t *testing.T) {
	tests := []struct {
		name      string
		requestID uint64
		data      any
		want      string
	}{
		{"struct", 42, HeartbeatResponse{ServerTime: 7}, `{"code":0,"msg":"ok","request_id":"42","data":{"server_time":7}}`},
		{"empty object", 0, struct{}{}, `{"code":0,"msg":"ok","request_id":"0","data":{}}`},
		{"max request id", ^uint64(0), map[string]int{}, `{"code":0,"msg":"ok","request_id":"18446744073709551615","data":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OK(tt.requestID, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
			var env Envelope
			if err := json.Unmarshal(got, &env); err != nil {
				t.Fatalf("not an envelope: %v", err)
			}
		})
	}
	if _, err := OK(1, func() {}); err == nil {
		t.Error("OK marshalled a func")
	}
}

func TestErr(t *testing.T) {
	tests := []struct {
		name      string
		requestID uint64
		code      int
		msg       string
		want      string
	}{
		{"plain", 7, CodeUnauthenticated, "not authenticated", `{"code":40101,"msg":"not authenticated","request_id":"7","data":null}`},
		{"escaped", 8, CodeInvalidArgument, "bad \"topic\"\n<x>", `{"code":40001,"msg":"bad \"topic\"\n\u003cx\u003e","request_id":"8","data":null}`},
		{"invalid utf-8", 9, CodeInternal, "\xff", `{"code":50001,"msg":"\ufffd","request_id":"9","data":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Err(tt.requestID, tt.code, tt.msg)
			if string(got) != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
			var env Envelope
			if err := json.Unmarshal(got, &env); err != nil {
				t.Fatalf("not an envelope: %v", err)
			}
			if env.Code != tt.code || string(env.Data) != "null" {
				t.Errorf("decoded %+v", env)
			}
		})
	}
}
