package http

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// probeTimeout bounds a probe; compose's healthcheck timeout is longer.
const probeTimeout = 3 * time.Second

// Probe is `imd probe URL`: nil when GET url answers 2xx. The container image has no shell or
// curl, so its healthcheck runs the binary itself (deploy/compose.yaml).
func Probe(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}
