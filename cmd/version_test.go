package cmd

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	t.Parallel()
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}}
	dep := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "v1.2.3"},
			Deps: []*debug.Module{{Path: modulePath, Version: v}}}
	}
	for _, tc := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"set at link time", "v1.0.0", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.9.0"}}, "v1.0.0"},
		{"go install of a release", "", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.9.1"}}, "v0.9.1"},
		{"a program depending on a release", "", dep("v0.9.2"), "v0.9.2"},
		{"a program replacing leat", "", &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.9.2", Replace: &debug.Module{Path: "../leat"}}}}, devVersion},
		{"a program on the examples' placeholder", "", dep("v0.0.0"), devVersion},
		{"a build from a clone", "", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: rev}, devVersion + "+0123456789ab"},
		{"a pseudo-version", "", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261128223100-0123456789ab+dirty"}, Settings: rev}, devVersion + "+0123456789ab"},
		{"no build information", "", nil, devVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(tc.linked, tc.info, tc.info != nil); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// The version of a build from this tree starts with devVersion; --version
// and the HTTP API print it.
func TestVersionPrinted(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "", "--version")
	if r.status != 0 || r.stdout != "leat "+version()+"\n" || len(version()) < len(devVersion) || version()[:len(devVersion)] != devVersion {
		t.Errorf("--version: status %d, stdout %q, stderr %q; version() %q", r.status, r.stdout, r.stderr, version())
	}
}

// CHANGELOG.md states the tag scheme and the version a build from a clone
// prints, so the two move together when a release is made.
func TestChangelogNamesTheVersions(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`vMAJOR.MINOR.PATCH`", "`" + devVersion + "`", "## [Unreleased]"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("CHANGELOG.md does not say %s", want)
		}
	}
}
