package dispatch

import (
	"testing"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
)

// FuzzPresenceBodies feeds outside bytes to the bodies of QUERY_PRESENCE, TYPING, SETTINGS and
// READ_STATE (issue 31): each either decodes or is 40001, never a panic.
func FuzzPresenceBodies(f *testing.F) {
	for _, seed := range []string{`{"user_ids":[1,2,3]}`, `{"topic":"grp_7","typing":true}`, `{"to_user":2}`,
		`{"hide_presence":true}`, `{"hide_presence":null}`, `{"hide_receipts":true}`, `{"topic":"grp_7","seq":13}`, `{"seq":"13"}`, `{"user_ids":[-1,1e30]}`, `{`, ``, `[]`, `{"typing":"yes"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&wire.QueryPresenceRequest{}, &wire.TypingRequest{}, &wire.SettingsRequest{}, &wire.ReadStateRequest{}} {
			if err := decodeBody(body, v); err != nil && apperr.CodeOf(err) != apperr.InvalidArgument {
				t.Fatalf("body %q: %v, code %v; want 40001", body, err, apperr.CodeOf(err))
			}
		}
	})
}
