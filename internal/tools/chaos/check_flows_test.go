package chaos_test

import (
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/tools/chaos"
	"github.com/leatdev/leat/task"
)

// A clean flow: a diamond f1 (a -> b, c -> d) whose a adds the child x0 at
// run time; b's first run (w1.3) was lost with its worker, and its second
// (w2.1) succeeded.
func cleanPlan() chaos.FlowPlan {
	return chaos.FlowPlan{
		ID:      "f1",
		Queue:   map[string]string{"a": "steps-a", "b": "steps-b", "c": "steps-a", "d": "steps-b", "x0": "steps-a"},
		Parents: map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}},
		Spawned: map[string][]string{"a": {"x0"}},
	}
}

const (
	flowW1 = "N f1 a 1 w1.1 -\nN f1 x0 1 w1.2 -\nN f1 b 1 w1.3 a/succeeded/w1.1,x0/succeeded/w1.2\n"
	flowW2 = "N f1 b 2 w2.1 a/succeeded/w1.1,x0/succeeded/w1.2\nN f1 c 1 w2.2 a/succeeded/w1.1,x0/succeeded/w1.2\n" +
		"N f1 d 1 w2.3 b/succeeded/w2.1,c/succeeded/w2.2\n"
)

func made(node, nonce string) string { return `{"node":"` + node + `","nonce":"` + nonce + `"}` }

func cleanFlowRedis() chaos.FlowsRedis {
	nonces := map[string]string{"a": "w1.1", "x0": "w1.2", "b": "w2.1", "c": "w2.2", "d": "w2.3"}
	rec := map[string]string{"st": "succeeded", "f": "1700000000123", "left": "0", "n": "5"}
	rd := chaos.FlowsRedis{Records: map[string]map[string]string{"f1": rec}, Tasks: map[string]chaos.NodeTask{}, Seen: map[string]chaos.FlowSeen{}}
	for n, nonce := range nonces {
		rec["s:"+n] = "succeeded"
		rec["r:"+n] = made(n, nonce)
		rec["w:"+n] = "0"
		rd.Tasks[task.FlowTaskID("f1", n)] = chaos.NodeTask{State: "succeeded", Nonce: nonce}
	}
	seen, ok := chaos.SeenOf(rec)
	if !ok {
		panic("an ended record not seen ended")
	}
	rd.Seen["f1"] = seen
	return rd
}

func TestCheckFlowsCleanRun(t *testing.T) {
	r := chaos.CheckFlows([]chaos.FlowPlan{cleanPlan()}, records(t, flowW1, flowW2), cleanFlowRedis())
	if !r.OK() {
		t.Fatalf("a clean run fails: %+v", r)
	}
	if r.Flows != 1 || r.Nodes != 5 || r.Added != 1 || r.NodeRuns != 6 || r.NodeDuplicates != 1 || r.SinkRuns != 1 {
		t.Fatalf("figures %+v", r)
	}
}

// A node whose first attempt fails on purpose: its children see the
// second attempt's result, which the flow and the queue keep.
func TestCheckFlowsFailedAttempt(t *testing.T) {
	p := cleanPlan()
	p.Fail = map[string]int{"c": 1}
	w2 := strings.Replace(flowW2, "N f1 c 1 w2.2", "N f1 c 1 w2.9 a/succeeded/w1.1,x0/succeeded/w1.2\nN f1 c 2 w2.2", 1)
	r := chaos.CheckFlows([]chaos.FlowPlan{p}, records(t, flowW1, w2), cleanFlowRedis())
	if !r.OK() || r.Failing != 1 || r.NodeDuplicates != 2 {
		t.Fatalf("result %+v", r)
	}
	// the flow keeping the failed attempt's nonce as the result is caught
	p.Fail["c"] = 2
	if r := chaos.CheckFlows([]chaos.FlowPlan{p}, records(t, flowW1, w2), cleanFlowRedis()); r.OK() || r.Outcomes != 1 {
		t.Fatalf("result %+v", r)
	}
}

// Each kind of flow failure is caught, and only it.
func TestCheckFlowsFindsViolations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w1, w2 string
		redis  func(*chaos.FlowsRedis)
		failed func(*chaos.FlowResult) bool
	}{
		{
			name:   "a node started before a parent succeeded",
			w1:     flowW1,
			w2:     strings.Replace(flowW2, "N f1 d 1 w2.3 b/succeeded/w2.1,c/succeeded/w2.2", "N f1 d 1 w2.3 b/succeeded/w2.1", 1),
			failed: func(r *chaos.FlowResult) bool { return r.Early == 1 && r.DoubleEnds == 0 && r.Outcomes == 0 },
		},
		{
			name:   "a node saw a parent not succeeded",
			w1:     flowW1,
			w2:     strings.Replace(flowW2, "d 1 w2.3 b/succeeded", "d 1 w2.3 b/failed", 1),
			failed: func(r *chaos.FlowResult) bool { return r.Early == 1 },
		},
		{
			name:   "a node saw a result its parent's flow did not keep",
			w1:     flowW1,
			w2:     strings.Replace(flowW2, "d 1 w2.3 b/succeeded/w2.1", "d 1 w2.3 b/succeeded/w1.3", 1),
			failed: func(r *chaos.FlowResult) bool { return r.Early == 1 },
		},
		{
			name:   "a node did not see a child its parent added",
			w1:     flowW1,
			w2:     strings.Replace(flowW2, "N f1 c 1 w2.2 a/succeeded/w1.1,x0/succeeded/w1.2", "N f1 c 1 w2.2 a/succeeded/w1.1", 1),
			failed: func(r *chaos.FlowResult) bool { return r.Early == 1 },
		},
		{
			name: "a flow's end written again",
			w1:   flowW1, w2: flowW2,
			redis:  func(rd *chaos.FlowsRedis) { rd.Records["f1"]["f"] = "1700000000999" },
			failed: func(r *chaos.FlowResult) bool { return r.DoubleEnds == 1 && r.FlowsLost == 0 },
		},
		{
			name: "a flow seen ended with a node running",
			w1:   flowW1, w2: flowW2,
			redis: func(rd *chaos.FlowsRedis) {
				s := rd.Seen["f1"]
				s.Open = []string{"d"}
				rd.Seen["f1"] = s
			},
			failed: func(r *chaos.FlowResult) bool { return r.DoubleEnds == 1 },
		},
		{
			name: "a node's end counted twice",
			w1:   flowW1, w2: flowW2,
			redis:  func(rd *chaos.FlowsRedis) { rd.Records["f1"]["left"] = "-1"; rd.Records["f1"]["w:d"] = "-1" },
			failed: func(r *chaos.FlowResult) bool { return r.DoubleEnds == 1 && r.Outcomes == 0 },
		},
		{
			name: "a flow failed",
			w1:   flowW1, w2: flowW2,
			redis:  func(rd *chaos.FlowsRedis) { rd.Records["f1"]["st"] = "failed" },
			failed: func(r *chaos.FlowResult) bool { return r.FlowsLost == 1 },
		},
		{
			name:   "a node never ran",
			w1:     flowW1,
			w2:     strings.Replace(flowW2, "N f1 c 1 w2.2 a/succeeded/w1.1,x0/succeeded/w1.2\n", "", 1),
			failed: func(r *chaos.FlowResult) bool { return r.NodesLost == 1 },
		},
		{
			name: "a node's success recorded twice: the flow and the queue keep different runs",
			w1:   flowW1, w2: flowW2,
			redis: func(rd *chaos.FlowsRedis) {
				rd.Tasks[task.FlowTaskID("f1", "b")] = chaos.NodeTask{State: "succeeded", Nonce: "w1.3"}
			},
			failed: func(r *chaos.FlowResult) bool { return r.Outcomes == 1 && r.Early == 0 },
		},
		{
			name: "a node's result of no run",
			w1:   flowW1, w2: flowW2,
			redis: func(rd *chaos.FlowsRedis) {
				rd.Records["f1"]["r:d"] = made("d", "w9.9")
				rd.Tasks[task.FlowTaskID("f1", "d")] = chaos.NodeTask{State: "succeeded", Nonce: "w9.9"}
			},
			failed: func(r *chaos.FlowResult) bool { return r.Outcomes == 1 },
		},
		{
			name: "a node in the record the flow was not given",
			w1:   flowW1, w2: flowW2,
			redis:  func(rd *chaos.FlowsRedis) { rd.Records["f1"]["s:e"] = "succeeded" },
			failed: func(r *chaos.FlowResult) bool { return r.DoubleEnds == 1 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := cleanFlowRedis()
			if tc.redis != nil {
				tc.redis(&rd)
			}
			r := chaos.CheckFlows([]chaos.FlowPlan{cleanPlan()}, records(t, tc.w1, tc.w2), rd)
			if r.OK() || !tc.failed(r) {
				t.Fatalf("result %+v", r)
			}
		})
	}
}

// What a handler saw is written and read back alike; a malformed N record
// is an error.
func TestNodeRecords(t *testing.T) {
	saw := map[string]chaos.SawParent{"b": {State: "succeeded", Nonce: "w1.2"}, "a": {State: "succeeded", Nonce: "?"}}
	line := "N f-1 d 2 w3.4 " + chaos.FormatSaw(saw) + "\nN f-1 a 1 w3.1 " + chaos.FormatSaw(nil) + "\n"
	l := records(t, line)
	if len(l.NodeRuns) != 2 {
		t.Fatalf("runs %+v", l.NodeRuns)
	}
	r := l.NodeRuns[0]
	if r.Flow != "f-1" || r.Node != "d" || r.Attempt != 2 || r.Nonce != "w3.4" || len(r.Saw) != 2 || r.Saw["b"] != saw["b"] || r.Saw["a"] != saw["a"] {
		t.Fatalf("run %+v", r)
	}
	if len(l.NodeRuns[1].Saw) != 0 {
		t.Fatalf("run %+v", l.NodeRuns[1])
	}
	for _, bad := range []string{"N f a 1 w\n", "N f a x w -\n", "N f a 1 w a/succeeded\n", "N f a 1 w /s/n\n"} {
		if _, err := chaos.NewLog().Tail(0, strings.NewReader(bad), 0); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if n := chaos.NonceOf([]byte(made("a", "w1.1"))); n != "w1.1" {
		t.Fatalf("nonce %q", n)
	}
	if n := chaos.NonceOf([]byte(`"x"`)); n != "?" {
		t.Fatalf("nonce %q", n)
	}
}
