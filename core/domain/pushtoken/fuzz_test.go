package pushtoken

import (
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

// FuzzParseRegistration: any body either parses into a registration that validates, or is
// 40001; never a panic, never another code.
func FuzzParseRegistration(f *testing.F) {
	for _, s := range []string{
		`{"device_id":"d1","platform":"apns","app_id":"com.example.chat","token":"abcd"}`,
		`{"device_id":"d1","platform":"fcm","app_id":"proj","token":"x:y","locale":"de-DE"}`,
		`{"device_id":"","platform":"apns"}`, `{"platform":"sms"}`, `[]`, `{"device_id":"a/b"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseRegistration(body)
		if err != nil {
			if apperr.CodeOf(err) != apperr.InvalidArgument {
				t.Fatalf("code %d for %q", apperr.CodeOf(err), body)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("parsed %+v does not validate: %v", r, err)
		}
	})
}
