package adminapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestCPUProfile(t *testing.T) {
	tests := []struct {
		name    string
		span    time.Duration
		status  int
		wantURI string
		wantErr bool
	}{
		{"whole seconds", 2500 * time.Millisecond, http.StatusOK, "/debug/pprof/profile?seconds=2", false},
		{"at least one second", 10 * time.Millisecond, http.StatusOK, "/debug/pprof/profile?seconds=1", false},
		{"refused", time.Second, http.StatusUnauthorized, "/debug/pprof/profile?seconds=1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, got := fakeServer(t, tt.status, "profile bytes")
			var buf bytes.Buffer
			err := c.CPUProfile(context.Background(), tt.span, &buf)
			if got.uri != tt.wantURI || got.auth != "Bearer k3y" || got.method != http.MethodGet {
				t.Fatalf("request %+v, want GET %s with the admin key", *got, tt.wantURI)
			}
			var e *Error
			if tt.wantErr {
				if !errors.As(err, &e) || e.Status != tt.status || e.Msg != "profile bytes" {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || buf.String() != "profile bytes" {
				t.Fatalf("profile %q, err %v", buf.String(), err)
			}
		})
	}
}
