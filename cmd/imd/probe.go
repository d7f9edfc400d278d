package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// probeTimeout bounds `imd probe`; compose's healthcheck timeout is longer.
const probeTimeout = 3 * time.Second

// probe is `imd probe URL`: exit 0 when GET URL answers 2xx. The container image has no shell
// or curl, so its healthcheck runs the binary itself (deploy/compose.yaml).
func probe(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: imd probe URL (e.g. http://127.0.0.1:8080/readyz)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe %s: HTTP %d", args[0], resp.StatusCode)
	}
	return nil
}
