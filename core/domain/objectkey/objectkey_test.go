package objectkey

import (
	"testing"
	"time"
)

func TestNewKeysAreValidAndMapBack(t *testing.T) {
	day := time.Date(2030, 4, 5, 23, 0, 0, 0, time.FixedZone("east", 3*3600))
	for ct, ext := range extensions {
		key := New("acme", 7, day, [16]byte{1, 2, 3}, ext)
		if !Valid(key) || Tenant(key) != "acme" {
			t.Errorf("New(%s) = %q: not valid, or not acme's", ct, key)
		}
		if got, ok := ContentType(key); !ok || got != ct {
			t.Errorf("ContentType(%q) = %q, %v; want %q", key, got, ok, ct)
		}
		if User(key) != 7 {
			t.Errorf("User(%q) = %d, want 7", key, User(key))
		}
		if want := "acme/7/20300405/"; key[:len(want)] != want {
			t.Errorf("New(%s) = %q: want the UTC day under %s", ct, key, want)
		}
	}
}

func TestValidRefusesWhatCouldEscape(t *testing.T) {
	for _, key := range []string{
		"",
		"acme/7/../../secret.png",
		"acme/7/20300405/short.png",
		"/acme/7/20300405/0123456789abcdef0123456789abcdef.png",
		"Acme/7/20300405/0123456789abcdef0123456789abcdef.png",
		"acme/07/20300405/0123456789abcdef0123456789abcdef.png",
		"acme/7/20300405/0123456789abcdef0123456789abcdef",
		"acme/7/20300405/0123456789abcdef0123456789abcdef.png/x",
	} {
		if Valid(key) {
			t.Errorf("Valid(%q) = true", key)
		}
	}
}

func TestExtensionRefusesPages(t *testing.T) {
	for _, ct := range []string{"text/html", "image/svg+xml", ""} {
		if ext, ok := Extension(ct); ok {
			t.Errorf("Extension(%q) = %q, true", ct, ext)
		}
	}
}

func TestThumbKeysDeriveFromTheirOriginal(t *testing.T) {
	original := New("acme", 7, time.Date(2030, 4, 5, 0, 0, 0, 0, time.UTC), [16]byte{9}, "webp")
	for _, tc := range []struct {
		ext, contentType string
	}{{"jpg", "image/jpeg"}, {"png", "image/png"}} {
		thumb := Thumb(original, tc.ext)
		if !Valid(thumb) || !IsThumb(thumb) || Original(thumb) != original {
			t.Errorf("Thumb(%q, %s) = %q: valid %v, thumb %v, original %q", original, tc.ext, thumb, Valid(thumb), IsThumb(thumb), Original(thumb))
		}
		if ct, ok := ContentType(thumb); !ok || ct != tc.contentType {
			t.Errorf("ContentType(%q) = %q, %v; want %s", thumb, ct, ok, tc.contentType)
		}
		if User(thumb) != 7 || Tenant(thumb) != "acme" {
			t.Errorf("%q: user %d tenant %q", thumb, User(thumb), Tenant(thumb))
		}
	}
	if IsThumb(original) || Original(original) != original {
		t.Errorf("an original %q reads as a thumbnail", original)
	}
	for _, key := range []string{Thumb(original, "gif"), Thumb(Thumb(original, "jpg"), "jpg"), original + ".thumb"} {
		if Valid(key) {
			t.Errorf("Valid(%q) = true", key)
		}
	}
}
