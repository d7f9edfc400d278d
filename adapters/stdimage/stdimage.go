// Package stdimage makes thumbnails (ports.Imager, issue 32) with Go's image decoders and
// golang.org/x/image: the type is sniffed from the bytes and decoded by its own decoder,
// called by name (no decoder registers itself globally), the pixel count is read from the
// header with DecodeConfig and refused past the limit before a pixel is allocated, and the
// thumbnail is encoded from the decoded pixels, so no metadata of the upload (EXIF location
// among it) survives; a JPEG's EXIF orientation is applied to the thumbnail and to the
// dimensions reported, so both are upright.
package stdimage

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/imdhq/imd/ports"
)

// DefaultMaxPixels is Config.MaxPixels's default.
const DefaultMaxPixels = 40_000_000

// jpegQuality of thumbnails: small files that still read well at list size.
const jpegQuality = 80

// Config bounds the work; how many images are made at once is the caller's (issue 32: the
// uploads use case waits for a worker before it reads the bytes).
type Config struct {
	// MaxPixels refuses larger images unread: a decode holds up to 8 bytes per pixel.
	MaxPixels int64
}

// codec decodes one sniffed type.
type codec struct {
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

// codecs are the types decoded, by the content type http.DetectContentType names.
var codecs = map[string]codec{
	"image/jpeg": {jpeg.DecodeConfig, jpeg.Decode},
	"image/png":  {png.DecodeConfig, png.Decode},
	"image/gif":  {gif.DecodeConfig, gif.Decode},
	"image/webp": {webp.DecodeConfig, webp.Decode},
}

// Imager makes thumbnails.
type Imager struct {
	cfg Config
}

var _ ports.Imager = (*Imager)(nil)

// New returns an Imager; zero fields take their defaults.
func New(cfg Config) *Imager {
	if cfg.MaxPixels <= 0 {
		cfg.MaxPixels = DefaultMaxPixels
	}
	return &Imager{cfg: cfg}
}

// Thumbnail sniffs, bounds, decodes, scales into maxSide by maxSide (never up), turns upright
// and encodes: JPEG when the result is opaque, else PNG.
func (m *Imager) Thumbnail(_ context.Context, data []byte, maxSide int) (ports.Thumbnail, error) {
	source := http.DetectContentType(data)
	c, ok := codecs[source]
	if !ok {
		return ports.Thumbnail{}, &ports.ImageRefusal{Reason: ports.RefusedType, Detail: "bytes are " + source + ", not a decoded image type"}
	}
	cfg, err := c.config(bytes.NewReader(data))
	if err != nil {
		return ports.Thumbnail{}, &ports.ImageRefusal{Reason: ports.RefusedCorrupt, Detail: err.Error()}
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return ports.Thumbnail{}, &ports.ImageRefusal{Reason: ports.RefusedCorrupt, Detail: "no pixels"}
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > m.cfg.MaxPixels {
		return ports.Thumbnail{}, &ports.ImageRefusal{Reason: ports.RefusedPixels,
			Detail: fmt.Sprintf("%dx%d is more than %d pixels", cfg.Width, cfg.Height, m.cfg.MaxPixels)}
	}
	img, err := c.decode(bytes.NewReader(data))
	if err != nil {
		return ports.Thumbnail{}, &ports.ImageRefusal{Reason: ports.RefusedCorrupt, Detail: err.Error()}
	}
	orient := 1
	if source == "image/jpeg" {
		orient = orientation(data)
	}
	thumb := upright(scale(img, maxSide), orient)
	t := ports.Thumbnail{Source: source, Width: img.Bounds().Dx(), Height: img.Bounds().Dy()}
	if orient >= 5 {
		t.Width, t.Height = t.Height, t.Width
	}
	var out bytes.Buffer
	if thumb.Opaque() {
		t.ContentType, t.Ext, err = "image/jpeg", "jpg", jpeg.Encode(&out, thumb, &jpeg.Options{Quality: jpegQuality})
	} else {
		t.ContentType, t.Ext, err = "image/png", "png", png.Encode(&out, thumb)
	}
	if err != nil {
		return ports.Thumbnail{}, fmt.Errorf("thumbnail: encode %s: %w", t.ContentType, err)
	}
	t.Data = out.Bytes()
	return t, nil
}

// scale fits img into maxSide by maxSide, keeping its aspect; smaller images keep their size.
func scale(img image.Image, maxSide int) *image.NRGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if long := max(w, h); long > maxSide {
		w, h = max(1, w*maxSide/long), max(1, h*maxSide/long)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	return dst
}
