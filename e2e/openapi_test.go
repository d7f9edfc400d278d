package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/imdhq/imd/docs"
)

// specCall is one HTTP call of TestOpenAPIMatchesTheRunningServer.
type specCall struct {
	method, path string
	body         any
	auth         string // "admin", "user", "other" (the second user) or "" (none)
	status       int    // the status the call must get
}

// TestOpenAPIMatchesTheRunningServer exercises the admin and client routes of the real binary
// once each (successes and the usual refusals) and validates every request and response —
// path, parameters, body and status code — against docs/openapi.yaml with libopenapi's
// validator.
func TestOpenAPIMatchesTheRunningServer(t *testing.T) {
	doc, err := libopenapi.NewDocument(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	srv := Start(t, Options{})
	alice, bob := int64(81_001), int64(81_002)
	tokens := map[string]string{"admin": srv.AdminKey, "user": srv.User(alice), "other": srv.User(bob)}
	admin := "/admin/v1/tenants/" + srv.Tenant
	topic := srv.Group(8100, alice, bob)

	calls := []specCall{
		{"GET", "/healthz", nil, "", 200},
		{"GET", "/readyz", nil, "", 200},
		{"POST", admin + "/users", map[string]any{"user_id": 81_003, "nickname": "Carol"}, "admin", 200},
		{"POST", admin + "/users", map[string]any{"user_id": -1}, "admin", 400},
		{"POST", admin + "/tokens", map[string]any{"user_id": 81_003}, "admin", 200},
		{"POST", admin + "/users", map[string]any{"user_id": 81_004}, "", 401},
		{"POST", "/admin/v1/tenants/no_such_tenant/users", map[string]any{"user_id": 1}, "admin", 404},
		{"GET", admin + "/users/81001", nil, "admin", 200},
		{"POST", admin + "/friendships", map[string]any{"user_a": alice, "user_b": 81_003}, "admin", 200},
		{"GET", admin + "/users/81001/friends", nil, "admin", 200},
		{"GET", admin + "/users/81001/groups", nil, "admin", 200},
		{"GET", admin + "/groups/8100", nil, "admin", 200},
		{"GET", admin + "/groups/8100/members", nil, "admin", 200},
		{"POST", admin + "/groups/8100/members", map[string]any{"user_ids": []int64{81_003}}, "admin", 200},
		{"GET", admin + "/shards", nil, "admin", 200},
		{"GET", admin + "/stats", nil, "admin", 200},
		{"GET", admin + "/compensation", nil, "admin", 200},
		{"GET", admin + "/retention", nil, "admin", 200},
		{"GET", admin + "/reports", nil, "admin", 200},
		{"GET", admin + "/migration/status", nil, "admin", 200},
		{"GET", "/admin/v1/tenants", nil, "admin", 200},

		{"GET", "/api/v1/me", nil, "user", 200},
		{"GET", "/api/v1/me", nil, "", 401},
		{"PUT", "/api/v1/me", map[string]any{"nickname": "Alice"}, "user", 200},
		{"GET", fmt.Sprintf("/api/v1/users/%d", bob), nil, "user", 200},
		{"GET", "/api/v1/friends", nil, "user", 200},
		{"GET", "/api/v1/friends/requests", nil, "user", 200},
		{"POST", "/api/v1/friends/requests", map[string]any{"user_id": bob, "message": "hi"}, "user", 200},
		{"GET", "/api/v1/groups", nil, "user", 200},
		{"GET", "/api/v1/groups/8100", nil, "user", 200},
		{"GET", "/api/v1/groups/8100/members", nil, "user", 200},
		{"POST", "/api/v1/messages", map[string]any{"topic": topic, "client_msg_id": "spec-1", "type": "text", "content": map[string]string{"text": "hi"}}, "user", 200},
		{"POST", "/api/v1/messages", map[string]any{"topic": topic, "client_msg_id": "spec-2", "type": "no-such-type"}, "user", 400},
		{"GET", "/api/v1/topics/" + topic + "/messages", nil, "other", 200},
		{"GET", "/api/v1/topics/" + topic + "/messages/1", nil, "other", 200},
		{"GET", "/api/v1/topics/" + topic + "/messages/999", nil, "other", 404},
		{"GET", "/api/v1/conversations", nil, "other", 200},
		{"POST", "/api/v1/read", map[string]any{"topic": topic, "seq": 1}, "other", 200},
		{"GET", "/api/v1/favorites", nil, "user", 200},
		{"GET", "/api/v1/blocks", nil, "user", 200},
		{"GET", admin + "/topics/" + topic + "/messages", nil, "admin", 200},
		{"GET", admin + "/topics/" + topic + "/messages/1", nil, "admin", 200},
		{"GET", admin + "/topics/" + topic + "/messages/1/context", nil, "admin", 200},
		{"POST", admin + "/topics/" + topic + "/route/rebuild", nil, "admin", 200},
		{"POST", "/api/v1/logout", nil, "other", 200},
	}
	for _, c := range calls {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			req, resp := specDo(t, srv, c, tokens[c.auth])
			if resp.StatusCode != c.status {
				t.Errorf("HTTP %d, want %d", resp.StatusCode, c.status)
			}
			// A call meant to be refused breaks the spec on purpose (a missing token, a bad
			// body): only its answer is checked.
			validate := v.ValidateHttpRequestResponse
			if c.status == http.StatusBadRequest || c.status == http.StatusUnauthorized {
				validate = v.ValidateHttpResponse
			}
			if ok, verrs := validate(req, resp); !ok {
				for _, e := range verrs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  %s at %s", se.Reason, se.FieldPath)
					}
				}
			}
		})
	}
}

// specDo runs one call and returns the request and the response with its body buffered, so the
// validator can read both.
func specDo(t *testing.T, srv *Server, c specCall, token string) (*http.Request, *http.Response) {
	t.Helper()
	var raw []byte
	if c.body != nil {
		var err error
		if raw, err = json.Marshal(c.body); err != nil {
			t.Fatal(err)
		}
	}
	newReq := func() *http.Request {
		req, err := http.NewRequest(c.method, "http://"+srv.HTTPAddr+c.path, bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if c.body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req
	}
	resp, err := http.DefaultClient.Do(newReq())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("answer: %s", body)
		}
	})
	return newReq(), resp
}
