// Package objectkey is the rule of the keys media objects are stored under (seed 003 §7.1,
// §9.4: media only by reference): tenant/user/day/random.ext, with the extension of one of a
// short list of content types. The upload use case issues keys by it, the directory checks an
// avatar by it, and the blob stores refuse any other key by it, so a key from a message can
// name a file without escaping its directory and never reaches another tenant's objects.
package objectkey

import (
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// extensions are the content types a client may upload, with the extension their keys get. A
// short list on purpose: the store serves these bytes back, and nothing on it may be taken for
// a page (text/html, image/svg+xml).
var extensions = map[string]string{
	"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp", "image/heic": "heic",
	"audio/mpeg": "mp3", "audio/aac": "aac", "audio/ogg": "ogg", "audio/amr": "amr", "audio/mp4": "m4a",
	"video/mp4": "mp4", "video/quicktime": "mov", "video/webm": "webm",
	"application/pdf": "pdf", "application/zip": "zip", "application/octet-stream": "bin",
}

// Extension returns the extension keys of contentType get; false: the type is not accepted.
func Extension(contentType string) (string, bool) {
	ext, ok := extensions[contentType]
	return ext, ok
}

// ContentType returns the content type a key was issued for, from its extension.
func ContentType(key string) (string, bool) {
	dot := strings.LastIndexByte(key, '.')
	if dot < 0 {
		return "", false
	}
	for ct, ext := range extensions {
		if ext == key[dot+1:] {
			return ct, true
		}
	}
	return "", false
}

// New returns the key of an object of tenant and user uploaded on day (UTC), named by random.
func New(tenant string, user int64, day time.Time, random [16]byte, ext string) string {
	return tenant + "/" + strconv.FormatInt(user, 10) + "/" + day.UTC().Format("20060102") + "/" + hex.EncodeToString(random[:]) + "." + ext
}

// keyRE is the shape of every key New and Thumb make.
var keyRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}/[1-9][0-9]{0,18}/[0-9]{8}/[0-9a-f]{32}\.[a-z0-9]{2,5}(\.thumb\.(jpg|png))?$`)

// thumbInfix separates an original's key from its thumbnail's extension.
const thumbInfix = ".thumb."

// Valid reports whether key has the shape of an issued key or of its thumbnail's, so it can
// name a file without escaping its directory.
func Valid(key string) bool { return keyRE.MatchString(key) }

// Thumb returns the key of the thumbnail of original, an image of extension ext (jpg or png),
// stored beside it (issue 32): derived from the original's, so whoever may read the original
// may read it and nothing else names it.
func Thumb(original, ext string) string { return original + thumbInfix + ext }

// IsThumb reports whether a valid key is a thumbnail's.
func IsThumb(key string) bool { return strings.Contains(key, thumbInfix) }

// Original returns the key a thumbnail's key was derived from; an original's is itself.
func Original(key string) string {
	before, _, _ := strings.Cut(key, thumbInfix)
	return before
}

// User returns the user an issued key was uploaded by.
func User(key string) int64 {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) < 2 {
		return 0
	}
	id, _ := strconv.ParseInt(parts[1], 10, 64)
	return id
}

// Tenant returns the tenant an issued key belongs to.
func Tenant(key string) string {
	t, _, _ := strings.Cut(key, "/")
	return t
}
