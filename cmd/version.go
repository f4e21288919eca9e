package cmd

import (
	"regexp"
	"runtime/debug"
)

// modulePath is leat's module, whose version "leat --version" prints.
const modulePath = "github.com/leatdev/leat"

// devVersion is the version of this source tree between releases: the next
// release's number with "-dev". A release tags the commit vMAJOR.MINOR.PATCH
// (CHANGELOG.md) and builds with that version (scripts/release).
const devVersion = "v0.9.0-dev"

// Version, when not empty, is the version "leat --version" prints. Release
// builds set it at link time:
//
//	go build -ldflags "-X github.com/leatdev/leat/cmd.Version=v0.9.0" ./cmd/leat
var Version string

// version returns the version of leat built into the program.
func version() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(Version, info, ok)
}

// pseudoVersion matches the versions the go command makes up for a commit
// that no tag names (v0.0.0-20260101120000-0123456789ab, with +dirty when
// the tree had changes): not a release.
var pseudoVersion = regexp.MustCompile(`\d{14}-[0-9a-f]{12}(\+incompatible)?(\+dirty)?$`)

// versionOf is version with its inputs given: the version set at link time;
// else leat's module version when it is a release (go install
// github.com/leatdev/leat/cmd/leat@v0.9.0, or a program depending on a
// release of leat); else devVersion, with the commit when the build recorded
// one.
func versionOf(linked string, info *debug.BuildInfo, ok bool) string {
	if linked != "" {
		return linked
	}
	if !ok || info == nil {
		return devVersion
	}
	v := info.Main.Version
	if info.Main.Path != modulePath {
		v = ""
		for _, d := range info.Deps {
			if d.Path == modulePath {
				v = d.Version
				if d.Replace != nil {
					v = d.Replace.Version
				}
			}
		}
	}
	if v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) && v != "v0.0.0" {
		return v
	}
	v = devVersion
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}
