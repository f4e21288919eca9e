package subprocess_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task/subprocess"
)

// gone reports whether process pid no longer runs (absent, or a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || strings.Contains(string(b), ") Z ")
}

// Processes a handler started in sessions of their own (setsid: out of its
// process group, re-parented away from it) end with the handler, when the
// worker closes its Handler.
func TestExecKillsDetachedDescendants(t *testing.T) {
	script := `echo '{"status":"ready"}'
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"task_id":"\([^"]*\)".*/\1/')
  setsid sleep 301 </dev/null >/dev/null 2>&1 & a=$!
  setsid sleep 301 </dev/null >/dev/null 2>&1 & b=$!
  setsid sleep 301 </dev/null >/dev/null 2>&1 & c=$!
  printf '{"task_id":"%s","result":[%d,%d,%d]}\n' "$id" $a $b $c
done`
	ex, err := subprocess.New(subprocess.Config{Command: []string{"/bin/sh", "-c", script}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	raw, err := ex.RunOnce(ctxT(t), "t-1", json.RawMessage(`{}`), nil)
	var pids []int
	if err != nil || json.Unmarshal(raw, &pids) != nil || len(pids) != 3 {
		t.Fatalf("%s, %v", raw, err)
	}
	for _, pid := range pids {
		if gone(pid) {
			t.Fatalf("process %d is not running", pid)
		}
	}
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the detached processes gone", func() bool {
		for _, pid := range pids {
			if !gone(pid) {
				return false
			}
		}
		return true
	})
}
