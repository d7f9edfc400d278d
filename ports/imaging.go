package ports

import (
	"context"
	"fmt"
)

// Imager makes thumbnails of uploaded images (issue 32): the type sniffed from the bytes, the
// pixel count bounded before any pixel is decoded, the result re-encoded from pixels so no
// metadata (EXIF location) survives. Decoding is CPU work: an Imager bounds how many run at
// once, waiting for a turn until ctx ends.
type Imager interface {
	// Thumbnail returns an image scaled to fit maxSide by maxSide, or an *ImageRefusal.
	Thumbnail(ctx context.Context, data []byte, maxSide int) (Thumbnail, error)
}

// Thumbnail is a made thumbnail and what was learned of its source.
type Thumbnail struct {
	Data        []byte
	ContentType string // image/jpeg, or image/png for an image that is not opaque
	Ext         string // the key extension of ContentType
	Source      string // the sniffed content type of the source image
	// Width and Height are the source's, upright.
	Width, Height int
}

// Reasons an image is refused.
const (
	RefusedType    = "type"    // not an image type that is decoded
	RefusedSize    = "size"    // more bytes than the limit
	RefusedPixels  = "pixels"  // more pixels than the limit (a decompression bomb)
	RefusedCorrupt = "corrupt" // the decoder failed
)

// ImageRefusal is an image that is not made into a thumbnail, and why.
type ImageRefusal struct {
	Reason string // one of the Refused constants
	Detail string
}

func (e *ImageRefusal) Error() string {
	return fmt.Sprintf("image refused (%s): %s", e.Reason, e.Detail)
}
