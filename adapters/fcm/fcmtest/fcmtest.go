// Package fcmtest is a local FCM for tests (issue 32: the providers cannot be reached from
// here): an HTTP/2 TLS server with Google's OAuth token endpoint, which verifies the
// service account's RS256 JWT bearer grant, and FCM HTTP v1's messages:send, which checks
// the access token, the project and a payload of at most 4096 bytes and answers with FCM's
// google.rpc error bodies.
package fcmtest

import (
	"crypto/rand"
	"crypto/rsa"
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
	Project     = "imd-test"
	ClientEmail = "imd-push@imd-test.iam.gserviceaccount.com"
	KeyID       = "0123abcd"
	scope       = "https://www.googleapis.com/auth/firebase.messaging"
	maxPayload  = 4096
)

// Request is one accepted message.
type Request struct {
	Token       string
	Title, Body string
	CollapseKey string
	Badge       int // android.notification.notification_count
	Data        map[string]string
}

// Server is the fake FCM and token endpoint.
type Server struct {
	*httptest.Server
	key *rsa.PrivateKey

	mu       sync.Mutex
	access   map[string]bool
	grants   int
	accepted []Request
	gone     map[string]bool
	failures map[string][]int
}

// New starts the server; Close stops it.
func New() (*Server, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("fcmtest: key: %w", err)
	}
	s := &Server{key: key, access: map[string]bool{}, gone: map[string]bool{}, failures: map[string][]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /v1/projects/{project}/messages:send", s.send)
	s.Server = httptest.NewUnstartedServer(mux)
	s.EnableHTTP2 = true
	s.StartTLS()
	return s, nil
}

// ServiceAccountJSON is the service account's key file, its token_uri this server.
func (s *Server) ServiceAccountJSON() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		panic(err) // an RSA key always marshals
	}
	raw, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": Project, "private_key_id": KeyID,
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": ClientEmail, "client_id": "1", "token_uri": s.tokenURI(),
	})
	if err != nil {
		panic(err)
	}
	return raw
}

// CertPEM is the server's certificate, for a client's roots.
func (s *Server) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

func (s *Server) tokenURI() string { return s.URL + "/token" }

// Unregister makes the token answer 404 UNREGISTERED from now on.
func (s *Server) Unregister(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone[token] = true
}

// FailNext makes the token's next answers these statuses (429 or 503), in order.
func (s *Server) FailNext(token string, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[token] = append(s.failures[token], statuses...)
}

// Accepted lists the messages answered 200, in order.
func (s *Server) Accepted() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.accepted...)
}

// Grants is how many access tokens were issued.
func (s *Server) Grants() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants
}

// token is the OAuth 2.0 JWT bearer grant (RFC 7523) as Google answers it.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(w, "unsupported_grant_type", "Invalid grant_type.")
		return
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(r.PostForm.Get("assertion"), claims, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid != "" && kid != KeyID {
			return nil, fmt.Errorf("unknown key id %q", kid)
		}
		return &s.key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(ClientEmail), jwt.WithAudience(s.tokenURI()),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		oauthError(w, "invalid_grant", "Invalid JWT Signature.")
		return
	}
	if sc, _ := claims["scope"].(string); !strings.Contains(" "+sc+" ", " "+scope+" ") {
		oauthError(w, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
		return
	}
	exp, _ := claims.GetExpirationTime()
	iat, _ := claims.GetIssuedAt()
	if iat == nil || exp.Sub(iat.Time) > time.Hour {
		oauthError(w, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes).")
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := "ya29." + hex.EncodeToString(b)
	s.mu.Lock()
	s.access[tok] = true
	s.grants++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3599})
}

func oauthError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		rpcError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "HTTP/2 expected.")
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	authorized := s.access[tok]
	s.mu.Unlock()
	if !authorized {
		rpcError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "", "Request had invalid authentication credentials.")
		return
	}
	if r.PathValue("project") != Project {
		rpcError(w, http.StatusForbidden, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil || len(body) > maxPayload {
		rpcError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument.")
		return
	}
	var m struct {
		Message struct {
			Token        string                       `json:"token"`
			Notification struct{ Title, Body string } `json:"notification"`
			Data         map[string]string            `json:"data"`
			Android      struct {
				CollapseKey  string `json:"collapse_key"`
				Notification struct {
					Count int `json:"notification_count"`
				} `json:"notification"`
			} `json:"android"`
		} `json:"message"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if dec.Decode(&m) != nil || m.Message.Token == "" {
		rpcError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Request contains an invalid argument.")
		return
	}
	mm := m.Message
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone[mm.Token] {
		rpcError(w, http.StatusNotFound, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.")
		return
	}
	if f := s.failures[mm.Token]; len(f) > 0 {
		s.failures[mm.Token] = f[1:]
		status := map[int]string{429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[f[0]]
		code := map[int]string{429: "QUOTA_EXCEEDED", 503: "UNAVAILABLE"}[f[0]]
		rpcError(w, f[0], status, code, "The service is currently unavailable.")
		return
	}
	s.accepted = append(s.accepted, Request{Token: mm.Token, Title: mm.Notification.Title, Body: mm.Notification.Body,
		CollapseKey: mm.Android.CollapseKey, Badge: mm.Android.Notification.Count, Data: mm.Data})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"name": fmt.Sprintf("projects/%s/messages/0:%d", Project, len(s.accepted))})
}

// rpcError writes a google.rpc.Status body, with FCM's error code in its details when given.
func rpcError(w http.ResponseWriter, status int, rpcStatus, fcmCode, msg string) {
	e := map[string]any{"code": status, "message": msg, "status": rpcStatus}
	if fcmCode != "" {
		e["details"] = []map[string]string{{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": fcmCode}}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}
