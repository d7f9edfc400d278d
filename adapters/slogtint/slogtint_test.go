package slogtint

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	tests := []struct {
		env, level string
		debugShown bool
		json       bool
	}{
		{"dev", "debug", true, false},
		{"prod", "info", false, true},
		{"prod", "nonsense", false, true}, // unknown level is info
		{"prod", "WARN", false, true},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		log := New(tt.env, tt.level, 3, &out)
		log.Debug("quiet")
		log.Error("loud")
		got := out.String()
		if strings.Contains(got, "quiet") != tt.debugShown || !strings.Contains(got, "loud") {
			t.Errorf("%s/%s: output %q, want debug shown=%v and the error", tt.env, tt.level, got, tt.debugShown)
		}
		var rec struct {
			NodeID int `json:"node_id"`
		}
		isJSON := json.Unmarshal(out.Bytes(), &rec) == nil
		if isJSON != tt.json || (isJSON && rec.NodeID != 3) || !strings.Contains(got, "node_id") {
			t.Errorf("%s/%s: output %q, want JSON=%v with node_id 3", tt.env, tt.level, got, tt.json)
		}
	}
}
