package stdimage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"runtime"
	"testing"

	"github.com/imdhq/imd/ports"
)

// halves is a w by h image, its left half red and its right half blue, alpha a.
func halves(w, h int, a uint8) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{R: 255, A: a}
			if x >= w/2 {
				c = color.NRGBA{B: 255, A: a}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeGIF(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gpsMarker stands for a location in the EXIF segment withEXIF adds.
const gpsMarker = "GPSLatitude=59.3293N"

// withEXIF puts an APP1 Exif segment after a JPEG's SOI: a little-endian TIFF header whose IFD0
// holds the orientation tag, followed by gpsMarker.
func withEXIF(jpg []byte, orient uint16) []byte {
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	tiff = binary.LittleEndian.AppendUint16(tiff, 1)
	tiff = binary.LittleEndian.AppendUint16(tiff, 0x0112)
	tiff = binary.LittleEndian.AppendUint16(tiff, 3)
	tiff = binary.LittleEndian.AppendUint32(tiff, 1)
	tiff = binary.LittleEndian.AppendUint16(tiff, orient)
	tiff = append(tiff, 0, 0, 0, 0, 0, 0)
	seg := append([]byte("Exif\x00\x00"), append(tiff, gpsMarker...)...)
	out := []byte{0xff, 0xd8, 0xff, 0xe1}
	out = binary.BigEndian.AppendUint16(out, uint16(len(seg)+2))
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}

// pngHeader is a PNG of only a signature and an IHDR declaring w by h RGBA pixels: what a
// decompression bomb shows before its data.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	out := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	out = append(out, ihdr...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(ihdr))
}

func TestThumbnail(t *testing.T) {
	webp, err := os.ReadFile("testdata/blue-purple-pink.lossy.webp")
	if err != nil {
		t.Fatal(err)
	}
	opaque := halves(1000, 500, 255)
	tests := []struct {
		name                string
		data                []byte
		source, contentType string
		width, height       int // the source's, upright
		thumbW, thumbH      int
		refused             string
	}{
		{"png scaled to the long side", encodePNG(t, opaque), "image/png", "image/jpeg", 1000, 500, 320, 160, ""},
		{"portrait jpeg", encodeJPEG(t, halves(300, 900, 255)), "image/jpeg", "image/jpeg", 300, 900, 106, 320, ""},
		{"small image keeps its size", encodePNG(t, halves(10, 5, 255)), "image/png", "image/jpeg", 10, 5, 10, 5, ""},
		{"transparent png stays png", encodePNG(t, halves(640, 640, 100)), "image/png", "image/png", 640, 640, 320, 320, ""},
		{"gif's first frame", encodeGIF(t, halves(64, 32, 255)), "image/gif", "image/jpeg", 64, 32, 64, 32, ""},
		{"webp", webp, "image/webp", "image/jpeg", 150, 100, 150, 100, ""},
		{"text is no image", []byte("hello, this is not a picture"), "", "", 0, 0, 0, 0, ports.RefusedType},
		{"html is no image", []byte("<html><script>alert(1)</script>"), "", "", 0, 0, 0, 0, ports.RefusedType},
		{"svg is not decoded", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "", "", 0, 0, 0, 0, ports.RefusedType},
		{"truncated png", encodePNG(t, opaque)[:100], "", "", 0, 0, 0, 0, ports.RefusedCorrupt},
		{"png header alone", pngHeader(10, 10), "", "", 0, 0, 0, 0, ports.RefusedCorrupt},
		{"zero width", pngHeader(0, 10), "", "", 0, 0, 0, 0, ports.RefusedCorrupt},
		{"bomb", pngHeader(50_000, 50_000), "", "", 0, 0, 0, 0, ports.RefusedPixels},
	}
	m := New(Config{MaxPixels: 4_000_000})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Thumbnail(context.Background(), tt.data, 320)
			if tt.refused != "" {
				var r *ports.ImageRefusal
				if !errors.As(err, &r) || r.Reason != tt.refused {
					t.Fatalf("Thumbnail = %v, want refused for %s", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != tt.source || got.ContentType != tt.contentType || got.Width != tt.width || got.Height != tt.height {
				t.Fatalf("got %s from %s, %dx%d; want %s from %s, %dx%d", got.ContentType, got.Source, got.Width, got.Height, tt.contentType, tt.source, tt.width, tt.height)
			}
			if wantExt := map[string]string{"image/jpeg": "jpg", "image/png": "png"}[got.ContentType]; got.Ext != wantExt {
				t.Fatalf("ext %q for %s", got.Ext, got.ContentType)
			}
			img, format, err := decodeAs(got)
			if err != nil {
				t.Fatalf("the thumbnail does not decode: %v", err)
			}
			if b := img.Bounds(); b.Dx() != tt.thumbW || b.Dy() != tt.thumbH || "image/"+format != got.ContentType {
				t.Fatalf("thumbnail %dx%d %s, want %dx%d %s", b.Dx(), b.Dy(), format, tt.thumbW, tt.thumbH, got.ContentType)
			}
		})
	}
}

// decodeAs decodes a thumbnail by the decoder its content type names.
func decodeAs(t ports.Thumbnail) (image.Image, string, error) {
	if t.ContentType == "image/png" {
		img, err := png.Decode(bytes.NewReader(t.Data))
		return img, "png", err
	}
	img, err := jpeg.Decode(bytes.NewReader(t.Data))
	return img, "jpeg", err
}

// TestBombIsRefusedUnallocated: an image declaring 50,000 x 50,000 pixels (10 GB decoded) is
// refused from its header; the refusal allocates next to nothing.
func TestBombIsRefusedUnallocated(t *testing.T) {
	m := New(Config{})
	bomb := pngHeader(50_000, 50_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := m.Thumbnail(context.Background(), bomb, 320)
	runtime.ReadMemStats(&after)
	var r *ports.ImageRefusal
	if !errors.As(err, &r) || r.Reason != ports.RefusedPixels {
		t.Fatalf("Thumbnail of a bomb = %v, want refused for pixels", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing the bomb allocated %d bytes", grew)
	}
}

// TestEXIFIsGoneAndOrientationApplied: a JPEG whose EXIF says "turn 90° clockwise" (6) and
// carries a location gives an upright thumbnail (its red half on top), dimensions reported
// upright, and no EXIF in the result.
func TestEXIFIsGoneAndOrientationApplied(t *testing.T) {
	for _, tt := range []struct {
		orient        uint16
		w, h          int
		redAt, blueAt image.Point
	}{
		{1, 400, 200, image.Pt(50, 100), image.Pt(350, 100)},
		{3, 400, 200, image.Pt(350, 100), image.Pt(50, 100)},
		{6, 200, 400, image.Pt(100, 50), image.Pt(100, 350)},
		{8, 200, 400, image.Pt(100, 350), image.Pt(100, 50)},
	} {
		src := withEXIF(encodeJPEG(t, halves(400, 200, 255)), tt.orient)
		if orientation(src) != int(tt.orient) {
			t.Fatalf("orientation read %d, want %d", orientation(src), tt.orient)
		}
		got, err := New(Config{}).Thumbnail(context.Background(), src, 400)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(got.Data, []byte("Exif")) || bytes.Contains(got.Data, []byte(gpsMarker)) {
			t.Fatalf("orientation %d: the thumbnail keeps the EXIF segment", tt.orient)
		}
		if got.Width != tt.w || got.Height != tt.h {
			t.Fatalf("orientation %d: dimensions %dx%d, want %dx%d", tt.orient, got.Width, got.Height, tt.w, tt.h)
		}
		img, err := jpeg.Decode(bytes.NewReader(got.Data))
		if err != nil {
			t.Fatal(err)
		}
		if r, _, b, _ := img.At(tt.redAt.X, tt.redAt.Y).RGBA(); r < 0xc000 || b > 0x4000 {
			t.Errorf("orientation %d: %v is not red", tt.orient, tt.redAt)
		}
		if r, _, b, _ := img.At(tt.blueAt.X, tt.blueAt.Y).RGBA(); b < 0xc000 || r > 0x4000 {
			t.Errorf("orientation %d: %v is not blue", tt.orient, tt.blueAt)
		}
	}
}

// FuzzThumbnail: any bytes give a refusal or a thumbnail within the box that decodes; nothing
// panics, and nothing past the pixel limit is decoded.
func FuzzThumbnail(f *testing.F) {
	f.Add(encodePNG(f, halves(40, 20, 255)))
	f.Add(encodePNG(f, halves(8, 8, 10)))
	f.Add(withEXIF(encodeJPEG(f, halves(40, 20, 255)), 6))
	f.Add(encodeGIF(f, halves(16, 8, 255)))
	f.Add(pngHeader(50_000, 50_000))
	if webp, err := os.ReadFile("testdata/blue-purple-pink.lossy.webp"); err == nil {
		f.Add(webp)
	}
	m := New(Config{MaxPixels: 1 << 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := m.Thumbnail(context.Background(), data, 64)
		var r *ports.ImageRefusal
		if errors.As(err, &r) {
			return
		}
		if err != nil {
			t.Fatalf("neither a thumbnail nor a refusal: %v", err)
		}
		if int64(got.Width)*int64(got.Height) > 1<<20 {
			t.Fatalf("decoded %dx%d past the pixel limit", got.Width, got.Height)
		}
		img, _, err := decodeAs(got)
		if err != nil {
			t.Fatalf("the thumbnail does not decode: %v", err)
		}
		if b := img.Bounds(); b.Dx() > 64 || b.Dy() > 64 || b.Dx() < 1 || b.Dy() < 1 {
			t.Fatalf("thumbnail %v outside the box", b)
		}
	})
}
