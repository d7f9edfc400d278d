// Package buildinfo says which build of imd and imctl runs, for their --version: the release
// version stamped at link time (-ldflags "-X main.version=…") and what the Go toolchain
// recorded in the binary (module version, VCS revision and time, Go version).
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is one build's identity.
type Info struct {
	Version   string // the stamped release, else the module version, else "devel"
	Revision  string // VCS commit, with "-dirty" when built from a modified tree
	Time      string // VCS commit time (RFC 3339)
	GoVersion string
}

// Read returns the running binary's build; stamped is the link-time version ("" if none).
func Read(stamped string) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: orDevel(stamped)}
	}
	return fromBuildInfo(stamped, bi)
}

func fromBuildInfo(stamped string, bi *debug.BuildInfo) Info {
	info := Info{Version: stamped, GoVersion: bi.GoVersion}
	if info.Version == "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	info.Version = orDevel(info.Version)
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Revision != "" {
		info.Revision += "-dirty"
	}
	return info
}

func orDevel(v string) string {
	if v == "" {
		return "devel"
	}
	return v
}

// String is what --version prints after the command's name.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Revision != "" {
		fmt.Fprintf(&b, " (revision %s", i.Revision)
		if i.Time != "" {
			fmt.Fprintf(&b, ", %s", i.Time)
		}
		b.WriteString(")")
	}
	if i.GoVersion != "" {
		fmt.Fprintf(&b, " %s", i.GoVersion)
	}
	return b.String()
}
