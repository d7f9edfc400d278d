package msgref

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
)

// FuzzValidateEmoji: the emoji comes from clients; whatever it is, the check answers without
// panicking, and what it accepts is short printable UTF-8, what it refuses is 40001 (issue 31).
func FuzzValidateEmoji(f *testing.F) {
	for _, s := range []string{"👍", "❤️", "👩🏽‍❤️‍💋‍👨🏻", ":party_parrot:", "", " ", "a\x00", "\xff", strings.Repeat("x", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, e string) {
		err := ValidateEmoji(e)
		if err != nil {
			if apperr.CodeOf(err) != apperr.InvalidArgument {
				t.Fatalf("%q: %v, want 40001", e, err)
			}
			return
		}
		if e == "" || len(e) > MaxEmojiBytes || !utf8.ValidString(e) || strings.ContainsAny(e, " \t\n\x00") {
			t.Fatalf("%q accepted", e)
		}
	})
}
