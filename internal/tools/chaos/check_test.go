package chaos_test

import (
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/tools/chaos"
)

// records parses worker record files given as strings, one per source.
func records(t *testing.T, sources ...string) *chaos.Log {
	t.Helper()
	l := chaos.NewLog()
	for i, s := range sources {
		off, err := l.Tail(i, strings.NewReader(s), 0)
		if err != nil {
			t.Fatal(err)
		}
		if off != int64(len(s)) {
			t.Fatalf("source %d: read up to %d of %d bytes", i, off, len(s))
		}
	}
	return l
}

// A clean run: key a sent 1..3 with one redelivery after a failover
// (token 7 then 9), one refused commit of the stalled first owner, one
// task run twice.
const (
	cleanW1 = "E 0 7 a 1 1-0 1\nC 0 7 1 a 1\nE 0 7 a 2 2-0 1\nS 0 7 a 2\nR 0 7 a 2 not-owner\nT t1 1\n"
	cleanW2 = "E 0 9 a 2 2-0 2\nC 0 9 2 a 2\nE 0 9 a 3 3-0 1\nC 0 9 3 a 3\nT t1 1\nT t2 2\n"
)

func cleanSends() chaos.Sends {
	return chaos.Sends{Acked: map[string]int64{"a": 3}, Tried: map[string]int64{"a": 3}}
}

func cleanRedis() chaos.Redis {
	return chaos.Redis{
		CommitLogs: map[int][]int64{0: {7, 9, 9}},
		State:      map[string]int64{"a": 3},
		TaskStates: map[string]string{"t1": "succeeded", "t2": "succeeded"},
		Tallies:    map[string]chaos.Tally{"a": {Last: 3, Entry: "3-0", Applied: 3}},
	}
}

func TestCheckCleanRun(t *testing.T) {
	r := chaos.Check(cleanSends(), []string{"t1", "t2"}, records(t, cleanW1, cleanW2), cleanRedis())
	if !r.OK() {
		t.Fatalf("a clean run fails: %+v", r)
	}
	if r.Events != 3 || r.Processed != 4 || r.Duplicates != 1 || r.Commits != 3 || r.Refused != 1 ||
		r.TaskRuns != 3 || r.TaskDuplicates != 1 {
		t.Fatalf("figures %+v", r)
	}
}

// Each kind of failure is caught, and only it.
func TestCheckFindsViolations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w1, w2 string
		sends  func(*chaos.Sends)
		redis  func(*chaos.Redis)
		tasks  []string
		failed func(*chaos.Result) bool // nil: the run passes
		check  func(*chaos.Result) bool // figures of a passing run
	}{
		{
			name:   "acknowledged send never committed",
			w1:     cleanW1,
			w2:     "E 0 9 a 2 2-0 2\nC 0 9 2 a 2\nT t1 1\nT t2 2\n",
			redis:  func(r *chaos.Redis) { r.CommitLogs[0] = []int64{7, 9}; r.State["a"] = 2 },
			failed: func(r *chaos.Result) bool { return r.Lost == 1 && r.State == 1 && len(r.Notes) == 1 },
		},
		{
			name:   "processed out of order",
			w1:     "E 0 7 a 2 2-0 1\nC 0 7 1 a 2\nE 0 7 a 1 1-0 1\nC 0 7 2 a 1\nE 0 7 a 3 3-0 1\nC 0 7 3 a 3\nT t1 1\nT t2 1\n",
			redis:  func(r *chaos.Redis) { r.CommitLogs[0] = []int64{7, 7, 7} },
			failed: func(r *chaos.Result) bool { return r.Order == 1 },
		},
		{
			name:   "commit applied through a superseded token",
			w1:     cleanW1 + "C 0 7 4 a 2\n",
			w2:     cleanW2,
			redis:  func(r *chaos.Redis) { r.CommitLogs[0] = []int64{7, 9, 9, 7} },
			failed: func(r *chaos.Result) bool { return r.Fencing == 2 }, // in the log, and in the records
		},
		{
			name:   "recorded commit missing from the log",
			w1:     cleanW1,
			w2:     cleanW2,
			redis:  func(r *chaos.Redis) { r.CommitLogs[0] = []int64{7, 9} },
			failed: func(r *chaos.Result) bool { return r.Fencing == 1 },
		},
		{
			name:   "acknowledged task never ran",
			w1:     cleanW1,
			w2:     cleanW2,
			tasks:  []string{"t1", "t2", "t3"},
			redis:  func(r *chaos.Redis) { r.TaskStates["t3"] = "pending" },
			failed: func(r *chaos.Result) bool { return r.TasksLost == 1 },
		},
		{
			name:   "task ran but is not succeeded",
			w1:     cleanW1,
			w2:     cleanW2,
			redis:  func(r *chaos.Redis) { r.TaskStates["t2"] = "dead" },
			failed: func(r *chaos.Result) bool { return r.TasksLost == 1 },
		},
		{
			name:   "record of a send that never happened",
			w1:     cleanW1 + "E 0 7 a 9 9-0 1\n",
			w2:     cleanW2,
			failed: func(r *chaos.Result) bool { return r.Phantoms == 1 && r.Order == 0 },
		},
		{
			name:   "a late duplicate sets the state back: noted, not failed",
			w1:     cleanW1,
			w2:     cleanW2 + "E 0 9 a 2 2-0 3\nC 0 9 4 a 2\n",
			redis:  func(r *chaos.Redis) { r.CommitLogs[0] = []int64{7, 9, 9, 9}; r.State["a"] = 2 },
			failed: nil,
			check: func(r *chaos.Result) bool {
				return r.Late == 1 && r.State == 1 && r.Duplicates == 2 && len(r.Notes) == 2
			},
		},
		{
			name:   "a batch sent again: another entry of an event, after a newer one, is resent, not late",
			w1:     cleanW1,
			w2:     cleanW2 + "E 0 9 a 2 5-0 1\n",
			failed: nil,
			check: func(r *chaos.Result) bool {
				return r.Resent == 1 && r.Late == 0 && r.Duplicates == 2 && len(r.Notes) == 0
			},
		},
		{
			name:   "a table applied an entry twice",
			w1:     cleanW1,
			w2:     cleanW2,
			redis:  func(r *chaos.Redis) { r.Tallies["a"] = chaos.Tally{Last: 3, Entry: "3-0", Applied: 4, Again: 1} },
			failed: func(r *chaos.Result) bool { return r.Tables == 1 && r.Lost == 0 },
		},
		{
			name:   "a table skipped an event",
			w1:     cleanW1,
			w2:     cleanW2,
			redis:  func(r *chaos.Redis) { r.Tallies["a"] = chaos.Tally{Last: 3, Entry: "3-0", Applied: 2, Gaps: 1} },
			failed: func(r *chaos.Result) bool { return r.Tables == 1 },
		},
		{
			name:   "a table behind the sends",
			w1:     cleanW1,
			w2:     cleanW2,
			redis:  func(r *chaos.Redis) { r.Tallies["a"] = chaos.Tally{Last: 2, Entry: "2-0", Applied: 2} },
			failed: func(r *chaos.Result) bool { return r.Tables == 1 },
		},
		{
			name:   "the last send's outcome is unknown: committed or not is fine",
			w1:     cleanW1,
			w2:     cleanW2 + "E 0 9 a 4 4-0 1\nC 0 9 4 a 4\n",
			sends:  func(s *chaos.Sends) { s.Tried["a"] = 4 },
			redis:  func(r *chaos.Redis) { r.CommitLogs[0] = []int64{7, 9, 9, 9}; r.State["a"] = 4 },
			failed: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sends, rd := cleanSends(), cleanRedis()
			if tc.sends != nil {
				tc.sends(&sends)
			}
			if tc.redis != nil {
				tc.redis(&rd)
			}
			tasks := tc.tasks
			if tasks == nil {
				tasks = []string{"t1", "t2"}
			}
			r := chaos.Check(sends, tasks, records(t, tc.w1, tc.w2), rd)
			if tc.failed == nil {
				if !r.OK() || (tc.check != nil && !tc.check(r)) {
					t.Fatalf("result %+v", r)
				}
				return
			}
			if r.OK() || !tc.failed(r) {
				t.Fatalf("result %+v", r)
			}
		})
	}
}

// Tail reads complete lines only and goes on from where it stopped; a
// malformed record is an error.
func TestLogTail(t *testing.T) {
	l := chaos.NewLog()
	s := "E 1 5 k 1 1-0 1\nC 1 5 1 k"
	off, err := l.Tail(0, strings.NewReader(s), 0)
	if err != nil || off != 16 || len(l.Processed) != 1 || len(l.Commits) != 0 {
		t.Fatalf("offset %d, err %v, log %+v", off, err, l)
	}
	s += " 1\n"
	if off, err = l.Tail(0, strings.NewReader(s), off); err != nil || off != int64(len(s)) || len(l.Commits) != 1 {
		t.Fatalf("offset %d, err %v, log %+v", off, err, l)
	}
	if l.Processed[0].Line != 1 {
		t.Fatalf("line %d", l.Processed[0].Line)
	}
	for _, bad := range []string{"X 1\n", "E 1 x k 1 1-0 1\n", "C 1 5 1 k\n", "R 1 5 k 1\n", "T t\n", "\n"} {
		if _, err := chaos.NewLog().Tail(0, strings.NewReader(bad), 0); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A tally tells a resent copy of an event (a newer entry of an old sequence
// number) from an entry applied twice, and counts skipped sequence numbers.
func TestTallyApply(t *testing.T) {
	var tl chaos.Tally
	for _, e := range []struct {
		id  string
		seq int64
	}{{"5-0", 1}, {"5-1", 2}, {"9-0", 2}, {"10-0", 3}, {"10-0", 3}, {"9-3", 4}, {"12-0", 6}} {
		tl = tl.Apply(e.id, e.seq)
	}
	want := chaos.Tally{Last: 6, Entry: "12-0", Applied: 7, Resent: 1, Again: 2, Gaps: 1}
	if tl != want {
		t.Fatalf("tally %+v, want %+v", tl, want)
	}
}
