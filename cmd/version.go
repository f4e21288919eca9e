package cmd

import "runtime/debug"

// modulePath is leat's module, whose version "leat --version" prints.
const modulePath = "github.com/leatdev/leat"

// version returns the version of leat built into the program: the module
// version of a released build, else "(devel)" with the commit when known.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	if info.Main.Path != modulePath {
		v = "(unknown)"
		for _, d := range info.Deps {
			if d.Path == modulePath {
				v = d.Version
				if d.Replace != nil {
					v = d.Replace.Version
				}
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "(devel)"
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
	}
	return v
}
