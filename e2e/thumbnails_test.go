package e2e

// Image thumbnails (issue 32) through the real binary, on the local dir store and on the
// S3-compatible server of deploy/local/services.sh: an uploaded image's thumbnail is made
// beside it on POST /api/v1/uploads/complete, a message carries it, its readers download it
// and no one else does; a decompression bomb and bytes that are no image are refused.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

func TestImageThumbnails(t *testing.T) {
	for _, store := range []string{"fs", "s3"} {
		t.Run(store, func(t *testing.T) {
			var env map[string]string
			var list func(bucket string) []string
			if store == "s3" {
				env, list = s3Env(t)
			}
			srv := Start(t, Options{Env: env})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			owner, member, outsider := srv.User(1), srv.User(2), srv.User(3)
			group := srv.Group(11, 1, 2)

			photo := photoJPEG(t, 1200, 800)
			key := putUpload(t, ctx, srv, owner, "image/jpeg", photo)
			var done wire.ImageContent
			rises(t, srv, func() {
				mustCall(t, srv, owner, "POST", "/api/v1/uploads/complete", map[string]string{"key": key}, &done)
			}, metric("media_thumbnail_total", "status", "made"), count("media_thumbnail_seconds"))
			if done.Key != key || done.ThumbKey != key+".thumb.jpg" || done.Width != 1200 || done.Height != 800 {
				t.Fatalf("complete = %+v; want %s.thumb.jpg, 1200x800", done, key)
			}
			if list != nil {
				if keys := list("imd-uploads"); !slices.Contains(keys, key) || !slices.Contains(keys, done.ThumbKey) {
					t.Fatalf("uploads bucket holds %v, want the image and its thumbnail", keys)
				}
			}
			thumb := map[string]string{"key": done.ThumbKey}
			refused(t, srv, member, "POST", "/api/v1/downloads", thumb, 40301)
			refused(t, srv, member, "POST", "/api/v1/uploads/complete", map[string]string{"key": key}, 40301)

			c := srv.Connect(ctx, owner, 1)
			wrong := imageWithThumb(group, "wrong-thumb", key, uploadKey(srv.Tenant, 1, "other", "png")+".thumb.jpg", 1200, 800)
			_, err := c.Send(ctx, wrong)
			assertCode(t, err, 40001)
			mustSend(t, ctx, c, imageWithThumb(group, "photo", key, done.ThumbKey, done.Width, done.Height))
			msgs, _, err := srv.Connect(ctx, member, 1).SyncMessages(ctx, group, 0, 50)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("the member syncs %d messages (%v), want the photo alone", len(msgs), err)
			}
			var content wire.ImageContent
			if err := json.Unmarshal(msgs[0].Content, &content); err != nil || content != done {
				t.Fatalf("the member reads content %s, want %+v", msgs[0].Content, done)
			}

			var download struct{ URL string }
			mustCall(t, srv, member, "POST", "/api/v1/downloads", thumb, &download)
			resp, err := http.Get(download.URL)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			img, err := jpeg.Decode(bytes.NewReader(got))
			if resp.StatusCode != http.StatusOK || err != nil || resp.Header.Get("Content-Type") != "image/jpeg" {
				t.Fatalf("GET of the thumbnail: %d %s, %d bytes (%v)", resp.StatusCode, resp.Header.Get("Content-Type"), len(got), err)
			}
			if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 213 {
				t.Fatalf("thumbnail %dx%d, want 320x213", b.Dx(), b.Dy())
			}
			refused(t, srv, outsider, "POST", "/api/v1/downloads", thumb, 40301)

			// A PNG declaring 50,000 x 50,000 pixels is refused from its header; bytes that are
			// no JPEG under a JPEG key are refused by their sniffed type. Neither gets a
			// thumbnail.
			bomb := putUpload(t, ctx, srv, owner, "image/png", pngDeclaring(50_000, 50_000))
			rises(t, srv, func() {
				refused(t, srv, owner, "POST", "/api/v1/uploads/complete", map[string]string{"key": bomb}, 41301)
			}, metric("media_thumbnail_refused_total", "reason", "pixels"))
			fake := putUpload(t, ctx, srv, owner, "image/jpeg", []byte("<html><script>alert(1)</script></html>"))
			rises(t, srv, func() {
				refused(t, srv, owner, "POST", "/api/v1/uploads/complete", map[string]string{"key": fake}, 40001)
			}, metric("media_thumbnail_refused_total", "reason", "type"))
			for _, k := range []string{bomb + ".thumb.jpg", bomb + ".thumb.png", fake + ".thumb.jpg", fake + ".thumb.png"} {
				var d struct{ URL string }
				mustCall(t, srv, owner, "POST", "/api/v1/downloads", map[string]string{"key": k}, &d)
				if resp, err := http.Get(d.URL); err != nil || resp.StatusCode != http.StatusNotFound {
					t.Fatalf("GET of %s: %v %v, want 404: no thumbnail was stored", k, resp, err)
				} else {
					resp.Body.Close()
				}
			}
		})
	}
}

// TestConsoleShowsThumbnails: an operator finds the node's thumbnails on the console's Media
// page: the one made and the bomb refused for its pixels.
func TestConsoleShowsThumbnails(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	owner := srv.User(1)
	for _, upload := range []struct {
		contentType string
		data        []byte
		code        int
	}{{"image/jpeg", photoJPEG(t, 64, 48), 0}, {"image/png", pngDeclaring(50_000, 50_000), 41301}} {
		key := map[string]string{"key": putUpload(t, ctx, srv, owner, upload.contentType, upload.data)}
		if upload.code == 0 {
			mustCall(t, srv, owner, "POST", "/api/v1/uploads/complete", key, nil)
		} else {
			refused(t, srv, owner, "POST", "/api/v1/uploads/complete", key, upload.code)
		}
	}

	b := signedInConsole(t, srv)
	b.open("media", "#media-metrics")
	b.waitText("#media-metrics", `status="made"`, 30*time.Second)
	b.waitText("#media-metrics", `reason="pixels"`, 30*time.Second)
	b.shot("media")
}

// putUpload asks for an upload of data as contentType and PUTs it on the signed URL.
func putUpload(t *testing.T, ctx context.Context, srv *Server, token, contentType string, data []byte) string {
	t.Helper()
	var grant struct {
		Key, URL string
		Headers  map[string]string
	}
	mustCall(t, srv, token, "POST", "/api/v1/uploads", map[string]any{"content_type": contentType, "size": len(data)}, &grant)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, grant.URL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range grant.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT to the signed URL: %v %v", resp, err)
	}
	resp.Body.Close()
	return grant.Key
}

func imageWithThumb(topic, clientID, key, thumb string, w, h int) wire.SendMessageRequest {
	content, _ := json.Marshal(wire.ImageContent{Key: key, ThumbKey: thumb, Width: w, Height: h})
	return wire.SendMessageRequest{Topic: topic, ClientMsgID: clientID, Type: wire.TypeImage, Content: content}
}

// photoJPEG is a w by h JPEG of a gradient.
func photoJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 128, A: 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngDeclaring is a PNG signature and IHDR declaring w by h RGBA pixels, and no data: what a
// decompression bomb shows before its data.
func pngDeclaring(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	out := append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13)
	out = append(out, ihdr...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(ihdr))
}
