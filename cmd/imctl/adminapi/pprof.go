package adminapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// profileSlack is how long past the profiled span the answer may take to arrive.
const profileSlack = 30 * time.Second

// CPUProfile records the server's CPU profile over d (whole seconds, at least one) from
// /debug/pprof/profile, behind the admin key, and copies it to w as it arrives.
func (c *Client) CPUProfile(ctx context.Context, d time.Duration, w io.Writer) error {
	seconds := max(int(d/time.Second), 1)
	root := strings.TrimSuffix(c.server().base, "/admin/v1")
	path := "/debug/pprof/profile?seconds=" + strconv.Itoa(seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+path, nil)
	if err != nil {
		return fmt.Errorf("admin GET %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	// The answer takes the profiled span itself: longer than the client's usual timeout.
	hc := *c.hc
	hc.Timeout = time.Duration(seconds)*time.Second + profileSlack
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return &Error{Method: http.MethodGet, Path: path, Status: resp.StatusCode, Msg: strings.TrimSpace(string(msg))}
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("admin GET %s: read answer: %w", path, err)
	}
	return nil
}
