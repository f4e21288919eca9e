package subprocess

import (
	"os"
	"strings"
	"sync/atomic"
)

// EnvAllowed are the variables of the worker's environment that its
// handler processes inherit by default (see Config.Env): those that
// locate programs, libraries, the user, the locale and the temporary
// directory. A name ending in * stands for every name it begins.
var EnvAllowed = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
	"PYTHON*", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_*", "NODE_PATH",
	"LD_LIBRARY_PATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "CUDA_VISIBLE_DEVICES",
}

// envAllowed reports whether the worker's variable name goes to handler
// processes without InheritEnv.
func envAllowed(name string) bool {
	for _, a := range EnvAllowed {
		if p, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(name, p) || name == a {
			return true
		}
	}
	return false
}

// leatEnv reports whether name is one of leat's own variables, never
// passed on to handler processes.
func leatEnv(name string) bool { return strings.HasPrefix(name, "LEAT_") }

// treeVar marks the environment of a handler process, inherited by its
// descendants, with a token of its own: killTree finds them by it when the
// process ends, though they left its process group.
const treeVar = "LEAT_EXEC_PROCESS"

// treeSeq numbers the processes of the worker, for their tokens.
var treeSeq atomic.Uint64

// env returns the environment of a process: the worker's allowed
// variables (all but leat's own with InheritEnv), PYTHONUNBUFFERED=1 unless
// the worker sets it (Python's print then writes each line at once, as the
// protocol needs), then cfg.Env.
func (e *Handler) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !leatEnv(name) && (e.cfg.InheritEnv || envAllowed(name)) {
			env = append(env, kv)
		}
	}
	if _, ok := os.LookupEnv("PYTHONUNBUFFERED"); !ok {
		env = append(env, "PYTHONUNBUFFERED=1")
	}
	for _, v := range e.cfg.Env {
		if !strings.Contains(v, "=") {
			val, ok := os.LookupEnv(v)
			if !ok {
				continue
			}
			v += "=" + val
		}
		env = append(env, v)
	}
	return env
}
