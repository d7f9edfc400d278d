package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "850f25f"}, {Key: "vcs.time", Value: "2026-12-01T20:00:00Z"}}
	tests := []struct {
		name    string
		stamped string
		main    string
		extra   []debug.BuildSetting
		want    string
	}{
		{"stamped release wins", "v1.4.0", "v0.0.0-2026", vcs, "v1.4.0 (revision 850f25f, 2026-12-01T20:00:00Z) go1.26.8"},
		{"module version from go install", "", "v1.3.0", nil, "v1.3.0 go1.26.8"},
		{"local build", "", "(devel)", vcs, "devel (revision 850f25f, 2026-12-01T20:00:00Z) go1.26.8"},
		{"modified tree", "", "(devel)", append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "devel (revision 850f25f-dirty, 2026-12-01T20:00:00Z) go1.26.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "imd", Version: tt.main}, Settings: tt.extra}
			if got := fromBuildInfo(tt.stamped, bi).String(); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadRunningBinary: the test binary has build info too.
func TestReadRunningBinary(t *testing.T) {
	info := Read("")
	if got := info.String(); info.Version == "" || !strings.HasPrefix(got, info.Version+" ") || !strings.Contains(got, "go1.") {
		t.Fatalf("got %q from %+v", got, info)
	}
}
