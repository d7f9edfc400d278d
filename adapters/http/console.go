package http

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/core/domain/apperr"
)

// The operator console (console/): static pages whose script calls the admin API itself. It
// holds no data and no operation of its own: signing in trades the admin key for a session
// cookie, and requireAdminKey accepts that session (with its CSRF token on every non-GET call)
// wherever it accepts the key.

//go:embed console
var consoleAssets embed.FS

const (
	consoleCookie = "imd_console"
	// csrfHeader carries the session's token on every state-changing call: a cross-site page
	// can make the browser send the cookie (SameSite aside) but cannot read the token.
	csrfHeader     = "X-CSRF-Token"
	consoleSession = 8 * time.Hour
	// maxConsoleSessions bounds the table; only holders of the admin key can fill it.
	maxConsoleSessions = 1024
	// Sign-in attempts per client address: enough for a typo or two, far too few to guess a key.
	signInsPerMinute = 10
	signInAddrs      = 4096
)

type consoleSessionState struct {
	csrf    string
	expires time.Time
}

// consoleSessions maps a session id (the cookie's value) to its CSRF token and expiry. They
// live in this process only: a restart signs every operator out.
type consoleSessions struct {
	mu sync.Mutex
	m  map[string]consoleSessionState
	// signIns are the sign-in budgets per client address, read against epoch.
	signIns     *ratelimit.Shared[netip.Addr]
	signInLimit ratelimit.Limit
	epoch       time.Time
}

func newConsoleSessions() *consoleSessions {
	return &consoleSessions{
		m:       map[string]consoleSessionState{},
		signIns: ratelimit.NewShared[netip.Addr](signInAddrs), epoch: time.Now(),
		signInLimit: ratelimit.NewLimit(ratelimit.Rate{Count: signInsPerMinute, Per: time.Minute}),
	}
}

// allowSignIn spends one sign-in attempt of the client address; an unknown address has no
// budget of its own.
func (cs *consoleSessions) allowSignIn(addr netip.Addr, now time.Time) bool {
	if !addr.IsValid() {
		return true
	}
	t := max(now.Sub(cs.epoch), 0)
	cs.signIns.Sweep(t)
	return cs.signIns.Allow(addr, cs.signInLimit, t)
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

func (cs *consoleSessions) create(now time.Time) (id string, st consoleSessionState, err error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for k, v := range cs.m {
		if !now.Before(v.expires) {
			delete(cs.m, k)
		}
	}
	if len(cs.m) >= maxConsoleSessions {
		return "", st, apperr.New(apperr.Busy, "too many console sessions")
	}
	id = randomToken()
	st = consoleSessionState{csrf: randomToken(), expires: now.Add(consoleSession)}
	cs.m[id] = st
	return id, st, nil
}

func (cs *consoleSessions) get(id string, now time.Time) (consoleSessionState, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	st, ok := cs.m[id]
	if ok && !now.Before(st.expires) {
		delete(cs.m, id)
		return st, false
	}
	return st, ok
}

func (cs *consoleSessions) drop(id string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.m, id)
}

// session is the request's valid console session, if its cookie names one.
func (s *Server) session(c echo.Context) (id string, st consoleSessionState, ok bool) {
	ck, err := c.Cookie(consoleCookie)
	if err != nil || ck.Value == "" {
		return "", st, false
	}
	st, ok = s.sessions.get(ck.Value, time.Now())
	return ck.Value, st, ok
}

// checkSession admits a request carrying a console session instead of the admin key: reads
// need the cookie, every other method also the session's CSRF token.
func (s *Server) checkSession(c echo.Context) error {
	_, st, ok := s.session(c)
	if !ok {
		return apperr.New(apperr.Unauthenticated, "missing or wrong admin key")
	}
	switch c.Request().Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if !equalSecret(c.Request().Header.Get(csrfHeader), st.csrf) {
		return apperr.New(apperr.Forbidden, "missing or wrong "+csrfHeader+" header")
	}
	return nil
}

// equalSecret compares in constant time; hashing first hides the lengths too.
func equalSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return want != "" && subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

func (s *Server) consoleRoutes(e *echo.Echo) {
	e.GET("/console", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/console/") })
	files, _ := fs.Sub(consoleAssets, "console") // the directory is embedded: it exists
	static := http.StripPrefix("/console/", http.FileServerFS(files))
	e.GET("/console/*", func(c echo.Context) error {
		h := c.Response().Header()
		// Only our own script and styles run; no page may frame the console.
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		static.ServeHTTP(c.Response(), c.Request())
		return nil
	})
	e.POST("/console/session", s.signIn)
	e.GET("/console/session", s.sessionInfo)
	e.DELETE("/console/session", s.signOut)
}

type sessionJSON struct {
	CSRFToken string `json:"csrf_token"`
	ExpiresAt int64  `json:"expires_at"` // Unix ms
}

type signInRequest struct {
	AdminKey string `json:"admin_key"`
}

// signIn trades the admin key for a session cookie. The body is JSON, so a cross-site form
// cannot post it without a CORS preflight, which this server never grants.
func (s *Server) signIn(c echo.Context) error {
	if !strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		return apperr.New(apperr.InvalidArgument, "Content-Type must be application/json")
	}
	if !s.sessions.allowSignIn(clientAddr(c), time.Now()) {
		return rateLimited(c)
	}
	var req signInRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.AdminKey == "" {
		return apperr.New(apperr.InvalidArgument, "admin_key is required")
	}
	if !equalSecret(req.AdminKey, s.cfg.AdminKey) {
		s.log.WarnContext(c.Request().Context(), "console sign-in refused", "ip", c.RealIP())
		return apperr.New(apperr.Unauthenticated, "wrong admin key")
	}
	id, st, err := s.sessions.create(time.Now())
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{
		Name: consoleCookie, Value: id, Path: "/", Expires: st.expires, MaxAge: int(consoleSession / time.Second),
		HttpOnly: true, Secure: overTLS(c.Request()), SameSite: http.SameSiteStrictMode,
	})
	return c.JSON(http.StatusOK, sessionJSON{CSRFToken: st.csrf, ExpiresAt: st.expires.UnixMilli()})
}

// sessionInfo gives a reloaded page its CSRF token back; other origins cannot read it.
func (s *Server) sessionInfo(c echo.Context) error {
	_, st, ok := s.session(c)
	if !ok {
		return apperr.New(apperr.Unauthenticated, "not signed in")
	}
	return c.JSON(http.StatusOK, sessionJSON{CSRFToken: st.csrf, ExpiresAt: st.expires.UnixMilli()})
}

func (s *Server) signOut(c echo.Context) error {
	if err := s.checkSession(c); err != nil {
		return err
	}
	id, _, _ := s.session(c)
	s.sessions.drop(id)
	c.SetCookie(&http.Cookie{Name: consoleCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: overTLS(c.Request()), SameSite: http.SameSiteStrictMode})
	return c.JSON(http.StatusOK, empty)
}

// overTLS: the request reached us over TLS, or reached the loopback Nginx over TLS (only that
// hop is believed, like X-Real-IP).
func overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
