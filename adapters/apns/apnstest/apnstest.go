// Package apnstest is a local APNs for tests (issue 32: the providers cannot be reached from
// here): an HTTP/2 TLS server that checks what APNs checks — the path /3/device/<token>,
// apns-topic, apns-push-type, apns-collapse-id of at most 64 bytes, a bearer JWT signed ES256
// by the team's key and issued less than an hour ago, a payload of at most 4096 bytes — and
// answers with APNs' error bodies.
package apnstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The identity the server accepts.
const (
	KeyID  = "ABC123DEFG"
	TeamID = "TEAM123456"
	Topic  = "com.example.chat"
)

// Request is one accepted notification.
type Request struct {
	Token      string
	CollapseID string
	Payload    map[string]any
}

// Server is the fake APNs.
type Server struct {
	*httptest.Server
	key *ecdsa.PrivateKey

	mu       sync.Mutex
	accepted []Request
	gone     map[string]bool
	failures map[string][]int // token → statuses to answer first
}

// New starts the server; Close stops it.
func New() (*Server, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("apnstest: key: %w", err)
	}
	s := &Server{key: key, gone: map[string]bool{}, failures: map[string][]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.EnableHTTP2 = true
	s.StartTLS()
	return s, nil
}

// KeyPEM is the team's .p8 key.
func (s *Server) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		panic(err) // a P-256 key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// CertPEM is the server's certificate, for a client's roots.
func (s *Server) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// Unregister makes the token answer 410 Unregistered from now on.
func (s *Server) Unregister(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone[token] = true
}

// FailNext makes the token's next answers these statuses (e.g. 429, 503), in order.
func (s *Server) FailNext(token string, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[token] = append(s.failures[token], statuses...)
}

// Accepted lists the notifications answered 200, in order.
func (s *Server) Accepted() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.accepted...)
}

const maxPayload = 4096

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	status, reason := s.check(r)
	if status != http.StatusOK {
		reject(w, status, reason)
		return
	}
	w.Header().Set("apns-id", "00000000-0000-0000-0000-000000000001")
	w.WriteHeader(http.StatusOK)
}

// check answers one request as APNs would; the order of checks follows APNs' table of reasons.
func (s *Server) check(r *http.Request) (int, string) {
	if r.ProtoMajor != 2 {
		return http.StatusBadRequest, "BadRequest" // APNs speaks HTTP/2 only
	}
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, "MethodNotAllowed"
	}
	token, ok := strings.CutPrefix(r.URL.Path, "/3/device/")
	if !ok {
		return http.StatusNotFound, "BadPath"
	}
	if token == "" {
		return http.StatusBadRequest, "MissingDeviceToken"
	}
	if reason := s.checkAuth(r.Header.Get("Authorization")); reason != "" {
		return http.StatusForbidden, reason
	}
	switch topic := r.Header.Get("apns-topic"); {
	case topic == "":
		return http.StatusBadRequest, "MissingTopic"
	case topic != Topic:
		return http.StatusBadRequest, "BadTopic"
	}
	switch r.Header.Get("apns-push-type") {
	case "alert", "background", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk":
	default:
		return http.StatusBadRequest, "InvalidPushType"
	}
	if len(r.Header.Get("apns-collapse-id")) > 64 {
		return http.StatusBadRequest, "BadCollapseId"
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	switch {
	case err != nil:
		return http.StatusBadRequest, "BadRequest"
	case len(body) == 0:
		return http.StatusBadRequest, "PayloadEmpty"
	case len(body) > maxPayload:
		return http.StatusRequestEntityTooLarge, "PayloadTooLarge"
	}
	var payload map[string]any
	if json.Unmarshal(body, &payload) != nil || payload["aps"] == nil {
		return http.StatusBadRequest, "BadRequest"
	}
	if b, err := hex.DecodeString(token); err != nil || len(b) != 32 {
		return http.StatusBadRequest, "BadDeviceToken"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone[token] {
		return http.StatusGone, "Unregistered"
	}
	if f := s.failures[token]; len(f) > 0 {
		s.failures[token] = f[1:]
		return f[0], map[int]string{429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable"}[f[0]]
	}
	s.accepted = append(s.accepted, Request{Token: token, CollapseID: r.Header.Get("apns-collapse-id"), Payload: payload})
	return http.StatusOK, ""
}

// checkAuth verifies the provider token: "bearer <JWT>", ES256 by the team's key under its
// key id, issued by the team within the hour.
func (s *Server) checkAuth(h string) string {
	raw, ok := strings.CutPrefix(h, "bearer ")
	if !ok {
		return "MissingProviderToken"
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		if t.Header["kid"] != KeyID {
			return nil, fmt.Errorf("unknown key id %v", t.Header["kid"])
		}
		return &s.key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(TeamID), jwt.WithIssuedAt())
	if err != nil || !tok.Valid {
		return "InvalidProviderToken"
	}
	iat, err := claims.GetIssuedAt()
	if err != nil || iat == nil {
		return "InvalidProviderToken"
	}
	if time.Since(iat.Time) > time.Hour {
		return "ExpiredProviderToken"
	}
	return ""
}

func reject(w http.ResponseWriter, status int, reason string) {
	body := map[string]any{"reason": reason}
	if status == http.StatusGone {
		body["timestamp"] = time.Now().UnixMilli()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("apns-id", "00000000-0000-0000-0000-000000000002")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
