package http

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/core/usecase/uploads"
)

// FileStore is the local-filesystem object store behind the /files/ routes: it checks the
// signed URL of each request itself, and its errors carry their contract code (core/domain/apperr).
type FileStore interface {
	Put(key string, q url.Values, contentType string, body io.Reader) error
	Open(key string, q url.Values) (*os.File, error)
}

// maxUploadBody bounds a PUT whatever its signature says (uploads.DefaultMaxSize and the
// config's max_size are below it).
const maxUploadBody = 1 << 30

type uploadRequest struct {
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

type uploadJSON struct {
	Key       string            `json:"key"`
	URL       string            `json:"url"`
	Method    string            `json:"method"`
	Headers   map[string]string `json:"headers"`
	MaxSize   int64             `json:"max_size"`
	ExpiresAt int64             `json:"expires_at"` // Unix ms
}

// upload hands out a presigned PUT for a new object key of the caller.
func (s *Server) upload(c echo.Context) error {
	var req uploadRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	who := caller(c)
	g, err := s.d.Social.Uploads.Upload(c.Request().Context(), uploads.Request{
		Tenant: who.Tenant, User: who.UserID, ContentType: req.ContentType, Size: req.Size,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, uploadJSON{
		Key: g.Key, URL: g.URL, Method: http.MethodPut, Headers: map[string]string{"Content-Type": g.ContentType},
		MaxSize: g.MaxSize, ExpiresAt: g.ExpiresAt.UnixMilli(),
	})
}

type keyRequest struct {
	Key string `json:"key"`
}

type completedJSON struct {
	Key      string `json:"key"`
	ThumbKey string `json:"thumb_key,omitempty"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
}

// completeUpload confirms an upload of the caller's after its PUT: an image gets its
// thumbnail made, and the answer names it with the image's dimensions (issue 32).
func (s *Server) completeUpload(c echo.Context) error {
	var req keyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	who := caller(c)
	done, err := s.d.Social.Uploads.Complete(c.Request().Context(), who.Tenant, who.UserID, req.Key)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, completedJSON{Key: done.Key, ThumbKey: done.ThumbKey, Width: done.Width, Height: done.Height})
}

// download hands out a presigned GET for an object key the caller may read (issue 33).
func (s *Server) download(c echo.Context) error {
	var req keyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	who := caller(c)
	u, expires, err := s.d.Social.Uploads.Download(c.Request().Context(), who.Tenant, who.UserID, req.Key)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"url": u, "expires_at": expires.UnixMilli()})
}

func (s *Server) fileRoutes(e *echo.Echo) {
	if s.d.Social.Files == nil {
		return
	}
	e.PUT("/files/*", s.putFile)
	e.GET("/files/*", s.getFile)
}

// putFile stores the body of a signed PUT; the signature is the only credential.
func (s *Server) putFile(c echo.Context) error {
	req := c.Request()
	if req.ContentLength > maxUploadBody {
		return apperr.New(apperr.TooLarge, "object too large")
	}
	body := http.MaxBytesReader(c.Response(), req.Body, maxUploadBody)
	err := s.d.Social.Files.Put(c.Param("*"), req.URL.Query(), req.Header.Get(echo.HeaderContentType), body)
	if err != nil {
		return fileError(err)
	}
	return c.NoContent(http.StatusOK)
}

// getFile serves the object of a signed GET, never as something a browser would run.
func (s *Server) getFile(c echo.Context) error {
	key := c.Param("*")
	f, err := s.d.Social.Files.Open(key, c.Request().URL.Query())
	if err != nil {
		return fileError(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return apperr.Wrap(apperr.Internal, "object unreadable", err)
	}
	h := c.Response().Header()
	ct, _ := objectkey.ContentType(key)
	h.Set(echo.HeaderContentType, ct)
	h.Set("X-Content-Type-Options", "nosniff")
	if !strings.HasPrefix(ct, "image/") && !strings.HasPrefix(ct, "audio/") && !strings.HasPrefix(ct, "video/") {
		h.Set(echo.HeaderContentDisposition, "attachment")
	}
	http.ServeContent(c.Response(), c.Request(), "", st.ModTime().Truncate(time.Second), f)
	return nil
}

// fileError answers the store's own coded errors (a bad signature, a missing object) as they
// are; anything else failed the store.
func fileError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return apperr.Wrap(apperr.TooLarge, "object larger than signed", err)
	case apperr.CodeOf(err) != apperr.Internal:
		return err
	}
	return apperr.Wrap(apperr.Internal, "object store failed", err)
}
