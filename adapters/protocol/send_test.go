package protocol

import (
	"testing"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
)

// TestSendRequestNeedsExactlyOneAddress is PROTOCOL §4's rule, shared by every transport.
func TestSendRequestNeedsExactlyOneAddress(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  wire.SendMessageRequest
		ok   bool
	}{
		{"topic", wire.SendMessageRequest{Topic: "grp_1"}, true},
		{"conversation_id", wire.SendMessageRequest{ConversationID: 7}, true},
		{"to_user", wire.SendMessageRequest{ToUser: 2}, true},
		{"none", wire.SendMessageRequest{}, false},
		{"topic and conversation_id", wire.SendMessageRequest{Topic: "grp_1", ConversationID: 7}, false},
		{"topic and to_user", wire.SendMessageRequest{Topic: "grp_1", ToUser: 2}, false},
		{"conversation_id and to_user", wire.SendMessageRequest{ConversationID: 7, ToUser: 2}, false},
		{"all three", wire.SendMessageRequest{Topic: "grp_1", ConversationID: 7, ToUser: 2}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.ClientMsgID = "c1"
			r, err := SendRequest(tt.req, "acme", 1, 9)
			if !tt.ok {
				if apperr.CodeOf(err) != apperr.InvalidArgument {
					t.Fatalf("err = %v, want 40001", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := r.Address
			if r.Tenant != "acme" || r.From != 1 || r.FromDevice != 9 || r.Draft.ClientMsgID != "c1" ||
				a.Topic != tt.req.Topic || a.ConversationID != tt.req.ConversationID || a.ToUser != tt.req.ToUser {
				t.Fatalf("request = %+v", r)
			}
		})
	}
}
