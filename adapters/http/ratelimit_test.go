package http

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/core/domain/apperr"
)

// limitedStack is the client stack with budgets on a clock the test moves.
type limitedStack struct {
	*clientStack
	at time.Duration // since the limiter's epoch
}

func newLimitedStack(t *testing.T, r ClientRateLimits) *limitedStack {
	t.Helper()
	s := &limitedStack{clientStack: newClientStack(t)}
	l := newClientLimiter(r)
	l.now = func() time.Time { return l.epoch.Add(s.at) }
	s.srv.limits = l
	return s
}

// from sends GET /api/v1/me with token from addr, as the local Nginx would pass it on.
func (s *limitedStack) from(addr, token string) *httptest.ResponseRecorder {
	s.t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/me", nil)
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("X-Real-IP", addr)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	s.srv.echo.ServeHTTP(rec, req)
	return rec
}

func (s *limitedStack) wantPass(addr, token string) {
	s.t.Helper()
	if rec := s.from(addr, token); rec.Code != http.StatusOK {
		s.t.Fatalf("from %s: %d %s, want 200", addr, rec.Code, rec.Body)
	}
}

func (s *limitedStack) wantLimited(addr, token string) {
	s.t.Helper()
	rec := s.from(addr, token)
	wantError(s.t, rec, http.StatusTooManyRequests, apperr.RateLimited)
	if rec.Header().Get("Retry-After") == "" {
		s.t.Errorf("429 without Retry-After")
	}
}

func TestClientAPIRateLimits(t *testing.T) {
	perMinute := func(n int) ratelimit.Rate { return ratelimit.Rate{Count: n, Per: time.Minute} }
	tests := []struct {
		name   string
		limits ClientRateLimits
		run    func(s *limitedStack, a, b, c string)
	}{
		{"a user's budget follows the user across addresses", ClientRateLimits{User: perMinute(3)}, func(s *limitedStack, a, b, _ string) {
			s.wantPass("198.51.100.1", a)
			s.wantPass("198.51.100.2", a)
			s.wantPass("198.51.100.3", a)
			s.wantLimited("198.51.100.4", a)
			s.wantPass("198.51.100.1", b) // another user is not affected
			s.at += 20 * time.Second      // one request refilled
			s.wantPass("198.51.100.1", a)
			s.wantLimited("198.51.100.1", a)
		}},
		{"an address's budget is shared by its users, IPv6 per /64", ClientRateLimits{IP: perMinute(2)}, func(s *limitedStack, a, b, c string) {
			s.wantPass("2001:db8:0:1::a", a)
			s.wantPass("2001:db8:0:1::b", b)
			s.wantLimited("2001:db8:0:1:ffff::1", c)
			s.wantLimited("2001:db8:0:1::a", "not-a-token") // refused before the token is checked
			s.wantPass("2001:db8:0:2::a", c)
		}},
		{"a user over budget does not spend the address's", ClientRateLimits{User: perMinute(1), IP: perMinute(2)}, func(s *limitedStack, a, b, c string) {
			s.wantPass("203.0.113.9", a)
			s.wantLimited("203.0.113.9", a)
			s.wantPass("203.0.113.9", b)
			s.wantLimited("203.0.113.9", c)
		}},
		{"zero rates are unlimited", ClientRateLimits{}, func(s *limitedStack, a, _, _ string) {
			for range 100 {
				s.wantPass("203.0.113.9", a)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newLimitedStack(t, tt.limits)
			tt.run(s, s.user("default", 1), s.user("default", 2), s.user("other", 1))
		})
	}
}

func TestAdminAPIIsNotRateLimited(t *testing.T) {
	s := newLimitedStack(t, ClientRateLimits{User: ratelimit.Rate{Count: 1, Per: time.Hour}, IP: ratelimit.Rate{Count: 1, Per: time.Hour}})
	tok := s.user("default", 1)
	s.wantPass("192.0.2.1", tok)
	s.wantLimited("192.0.2.1", tok)
	for range 3 {
		if rec := s.do(http.MethodGet, "/admin/v1/tenants/default/users/1", ""); rec.Code != http.StatusOK {
			t.Fatalf("admin call: %d %s", rec.Code, rec.Body)
		}
	}
}

func TestASweepKeepsBucketsStillRefilling(t *testing.T) {
	s := newLimitedStack(t, ClientRateLimits{User: ratelimit.Rate{Count: 1, Per: time.Second}})
	a, b := s.user("default", 1), s.user("default", 2)
	s.wantPass("192.0.2.1", b)                    // refilled long before the sweep
	s.at = limitSweepEvery - 500*time.Millisecond // a spends its budget just before
	s.wantPass("192.0.2.1", a)
	s.at = limitSweepEvery // this request sweeps
	s.wantLimited("192.0.2.1", a)
	s.wantPass("192.0.2.1", b)
}
