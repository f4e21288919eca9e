package e2e_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// Without Chromium on PATH, a browser test is skipped with the command
// that installs it, and fails under CI=true.
func TestChromiumMissing(t *testing.T) {
	url := redistest.URL(t) // the child finds no redis-server on PATH either
	for _, c := range []struct {
		ci, want string
		fail     bool
	}{
		{"", "--- SKIP: TestDashboardToken", false},
		{"true", "--- FAIL: TestDashboardToken", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestDashboardToken$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), "CI="+c.ci, "LEAT_TEST_REDIS_URL="+url)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if failed := errors.As(err, &exit); failed != c.fail || (err != nil && exit == nil) {
			t.Errorf("CI=%q: %v\n%s", c.ci, err, out)
		}
		if !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "Chromium is missing") || !strings.Contains(string(out), chromiumHint) {
			t.Errorf("CI=%q: output lacks %q, the reason and the install command:\n%s", c.ci, c.want, out)
		}
	}
}
