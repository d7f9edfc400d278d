package pushtoken

import (
	"strings"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

func TestParseRegistration(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"apns", `{"device_id":"d1","platform":"apns","app_id":"com.example.chat","token":"ab12"}`, true},
		{"fcm with locale", `{"device_id":"d1","platform":"fcm","app_id":"proj","token":"x:y","locale":"de-DE"}`, true},
		{"unknown platform", `{"device_id":"d1","platform":"sms","app_id":"a","token":"t"}`, false},
		{"no token", `{"device_id":"d1","platform":"apns","app_id":"a"}`, false},
		{"no device", `{"platform":"apns","app_id":"a","token":"t"}`, false},
		{"slash in token", `{"device_id":"d1","platform":"apns","app_id":"a","token":"../x"}`, false},
		{"unknown field", `{"device_id":"d1","platform":"apns","app_id":"a","token":"t","x":1}`, false},
		{"long token", `{"device_id":"d1","platform":"apns","app_id":"a","token":"` + strings.Repeat("a", MaxToken+1) + `"}`, false},
		{"trailing", `{"device_id":"d1","platform":"apns","app_id":"a","token":"t"} {}`, false},
		{"not json", `nope`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRegistration([]byte(tc.body))
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && apperr.CodeOf(err) != apperr.InvalidArgument {
				t.Fatalf("code = %d, want 40001", apperr.CodeOf(err))
			}
		})
	}
}
