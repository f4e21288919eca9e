package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

type step struct {
	Name string `json:"name"`
}

// The dashboard draws a flow: a diamond's 4 nodes with their states and
// its 4 edges, redrawn as its nodes end; a node links to its task's view,
// which links back; a layer of 30 nodes shows 12 and a box for the 18
// others until opened; the flows are listed by state. What the flow's
// nodes return is shown as text, never read as markup.
func TestDashboardFlows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, prefix := redistest.Client(t)
	newApp := func(worker string) *app.App {
		a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, WorkerID: worker, Logger: quiet(), LeaderLease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	// Node c of the diamond, and the wide flow's gate, wait until released.
	gates := map[string]chan struct{}{"c": make(chan struct{}), "gate": make(chan struct{}), "hold": make(chan struct{})}
	var flaky atomic.Int32 // node "flaky" fails its first run
	open := func(name string) { close(gates[name]) }
	w := newApp("w1")
	_, err := task.Handle(w, "steps", func(ctx context.Context, tk *task.Task[step]) (string, error) {
		if g := gates[tk.Payload.Name]; g != nil {
			select {
			case <-g:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if tk.Payload.Name == "flaky" && flaky.Add(1) == 1 {
			return "", task.SkipRetry(errors.New("flaky the first time"))
		}
		if tk.Payload.Name == "d" {
			return `<b id="injected">d</b>`, nil
		}
		return "did " + tk.Payload.Name, nil
	}, task.MaxRetries(0), task.Concurrency(8))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Run(wctx) }()
	t.Cleanup(func() { stop(); wg.Wait() })

	served := newApp("api")
	redistest.Eventually(t, 10*time.Second, "queue steps registered", func() bool {
		qs, _ := task.Queues(ctx, served)
		return len(qs) == 1
	})
	submit := func(id string, nodes map[string][]string) {
		t.Helper()
		spec := task.FlowSpec{ID: id, Nodes: map[string]task.FlowNodeSpec{}}
		for n, ps := range nodes {
			spec.Nodes[n] = task.FlowNodeSpec{Queue: "steps", Payload: json.RawMessage(`{"name":"` + n + `"}`), Parents: ps}
		}
		f, err := task.BuildFlow(ctx, served, spec, nil)
		if err == nil {
			_, err = f.Submit(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	submit("diamond", map[string][]string{"a": nil, "b": {"a"}, "c": {"a"}, "d": {"b", "c"}})

	srv := httptest.NewServer(api.NewHandler(served, api.Options{}))
	t.Cleanup(srv.Close)
	b := browser(t)
	run(t, b, "open the diamond", chromedp.Navigate(srv.URL+"/#/flow/diamond"), chromedp.WaitVisible(chromedp.CSS("#flow-svg")))

	states := func() string {
		return eval[string](t, b, `[...document.querySelectorAll('#flow-svg .flow-node')].map((g) => g.dataset.node + '=' + g.dataset.state).sort().join(' ')`)
	}
	// Every text of a box reads on its colour (contrast 4.5:1 or more).
	readable := func(when string) {
		t.Helper()
		if low := eval[[]string](t, b, `(() => {
			const lum = (css) => { const [r, g, b] = css.match(/\d+/g).map(Number).map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
				return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
			return [...document.querySelectorAll('#flow-svg .flow-node')].flatMap((g) => {
				const bg = lum(getComputedStyle(g.querySelector('.box')).fill);
				return [...g.querySelectorAll('text')].filter((x) => {
					const fg = lum(getComputedStyle(x).fill);
					return (Math.max(bg, fg) + 0.05) / (Math.min(bg, fg) + 0.05) < 4.5;
				}).map((x) => g.dataset.state + ': ' + x.textContent + ' ' + getComputedStyle(x).fill + ' on ' + getComputedStyle(g.querySelector('.box')).fill);
			});
		})()`); len(low) > 0 {
			t.Errorf("%s: texts hard to read: %v", when, low)
		}
	}
	edges := func() string {
		return eval[string](t, b, `[...document.querySelectorAll('#flow-svg .flow-edge')].map((p) => p.dataset.from + '>' + p.dataset.to).sort().join(' ')`)
	}
	waitTrue(t, b, "a and b succeeded, c running, d waiting",
		`[...document.querySelectorAll('#flow-svg .flow-node')].map((g) => g.dataset.node + '=' + g.dataset.state).sort().join(' ') === 'a=succeeded b=succeeded c=active d=waiting'`)
	if got := edges(); got != "a>b a>c b>d c>d" {
		t.Fatalf("edges %q, want a>b a>c b>d c>d", got)
	}
	// The boxes: each shows its name, queue and state, in a column per
	// depth (a; b and c; d), left to right.
	type box struct {
		Node, Text string
		X          float64
	}
	boxes := eval[[]box](t, b, `[...document.querySelectorAll('#flow-svg .flow-node')].map((g) => ({
		Node: g.dataset.node, X: g.transform.baseVal.consolidate().matrix.e,
		Text: [...g.querySelectorAll('text')].map((x) => x.textContent).join('|') })).sort((p, q) => p.Node < q.Node ? -1 : 1)`)
	for _, bx := range boxes {
		if want := bx.Node + "|steps|"; !strings.HasPrefix(bx.Text, want) {
			t.Errorf("box %+v, want its name, queue and state", bx)
		}
	}
	if len(boxes) != 4 || !(boxes[0].X < boxes[1].X && boxes[1].X == boxes[2].X && boxes[2].X < boxes[3].X) {
		t.Errorf("columns of a, b, c, d: %+v; want a, then b and c together, then d", boxes)
	}
	readable("succeeded, active and waiting nodes")
	colourScheme(t, b, "dark")
	waitTrue(t, b, "dark colours", `matchMedia('(prefers-color-scheme: dark)').matches`)
	readable("succeeded, active and waiting nodes, dark")
	colourScheme(t, b, "light")
	if got := text(t, b, `#fv-counts [data-count="active"] .kpi-value`); got != "1" {
		t.Errorf("active nodes %q, want 1", got)
	}
	screenshot(t, b, "LEAT_SCREENSHOT_FLOW")

	// c ends: the graph follows, then d, then the flow.
	open("c")
	waitTrue(t, b, "every node succeeded", `[...document.querySelectorAll('#flow-svg .flow-node')].map((g) => g.dataset.state).join() === 'succeeded,succeeded,succeeded,succeeded'`)
	waitTrue(t, b, "the flow succeeded", `document.querySelector('#fv-meta [data-flow-state]')?.textContent === 'succeeded'`)
	if got := edges(); got != "a>b a>c b>d c>d" {
		t.Errorf("edges once ended %q", got)
	}
	if got := states(); got != "a=succeeded b=succeeded c=succeeded d=succeeded" {
		t.Errorf("states once ended %q", got)
	}
	// d's result is text.
	waitTrue(t, b, "d's result shown", `document.querySelector('#fv-results-list')?.innerText.includes('<b id=\\"injected\\">d</b>')`)
	if eval[bool](t, b, `document.getElementById('injected') !== null`) {
		t.Fatal("a node's result was read as markup")
	}

	// A node links to its task, whose view links back to the flow.
	run(t, b, "open d's task", chromedp.Click(chromedp.CSS(`#flow-svg .flow-node[data-node="d"]`)))
	waitTrue(t, b, "d's task", `location.hash === '#/task/steps/flow%3Adiamond%3Ad' && document.querySelector('#tv-state')?.textContent === 'succeeded'`)
	if got := text(t, b, `#tv-detail pre[data-field="payload"]`); !strings.Contains(got, `"name": "d"`) {
		t.Errorf("d's payload %q", got)
	}
	run(t, b, "back to the flow", chromedp.Click(chromedp.CSS(`#tv-flow`)))
	waitTrue(t, b, "the flow again", `location.hash === '#/flow/diamond' && document.querySelectorAll('#flow-svg .flow-node').length === 4`)

	// A wide layer: 30 children of one node, 12 drawn and a box for the
	// others; opened, all 30, in sub-columns.
	wide := map[string][]string{"gate": nil, "sum": {}}
	for i := range 30 {
		n := fmt.Sprintf("part-%02d", i)
		wide[n] = []string{"gate"}
		wide["sum"] = append(wide["sum"], n)
	}
	submit("wide", wide)
	run(t, b, "open the wide flow", chromedp.Navigate(srv.URL+"/#/flow/wide"))
	waitTrue(t, b, "12 of the 30 and a box for 18", `document.querySelectorAll('#flow-svg .flow-node').length === 14 && document.querySelector('#flow-svg .flow-more')?.dataset.hidden === '18'`)
	if got := eval[int](t, b, `document.querySelectorAll('#flow-svg .flow-edge').length`); got != 12+1+12+1 {
		t.Errorf("%d edges drawn collapsed, want 26 (gate to 12 parts and to the box, those to sum)", got)
	}
	run(t, b, "open the layer", chromedp.Click(chromedp.CSS(`#flow-svg .flow-more`)))
	waitTrue(t, b, "the 30 drawn", `document.querySelectorAll('#flow-svg .flow-node').length === 32 && !document.querySelector('#flow-svg .flow-more')`)
	if got := eval[int](t, b, `new Set([...document.querySelectorAll('#flow-svg .flow-node[data-node^="part-"]')].map((g) => g.transform.baseVal.consolidate().matrix.e)).size`); got != 2 {
		t.Errorf("the open layer in %d sub-columns, want 2 of 20 rows", got)
	}
	if got := eval[int](t, b, `document.querySelectorAll('#flow-svg .flow-edge').length`); got != 60 {
		t.Errorf("%d edges drawn open, want 60", got)
	}
	screenshot(t, b, "LEAT_SCREENSHOT_FLOW_WIDE")

	// The flows by state.
	run(t, b, "open the flows", chromedp.Navigate(srv.URL+"/#/flows"))
	waitTrue(t, b, "wide running, diamond succeeded", `document.querySelector('#flows-list-running tr[data-flow="wide"]') && document.querySelector('#flows-list-succeeded tr[data-flow="diamond"]')`)
	if got := text(t, b, `#flows-list-running tr[data-flow="wide"] td:nth-child(3)`); got != "32" {
		t.Errorf("the wide flow's nodes %q, want 32", got)
	}
	open("gate")
	waitTrue(t, b, "wide succeeded", `document.querySelector('#flows-list-succeeded tr[data-flow="wide"]') && !document.querySelector('#flows-list-running tr[data-flow]')`)
	run(t, b, "open the wide flow from the list", chromedp.Click(chromedp.CSS(`#flows-list-succeeded tr[data-flow="wide"] a`)))
	waitTrue(t, b, "the wide flow's graph", `location.hash === '#/flow/wide' && document.querySelector('#flow-svg')`)

	// Cancel flow: the first click arms the button, the second cancels
	// the flow, its running node stopped.
	submit("stuck", map[string][]string{"hold": nil, "after": {"hold"}})
	run(t, b, "open the stuck flow", chromedp.Navigate(srv.URL+"/#/flow/stuck"))
	waitTrue(t, b, "hold running", `document.querySelector('#flow-svg .flow-node[data-node="hold"]')?.dataset.state === 'active' && document.querySelector('#fv-cancel')`)
	run(t, b, "arm Cancel flow", chromedp.Click(chromedp.CSS(`#fv-cancel`)))
	waitTrue(t, b, "Cancel flow armed", `document.querySelector('#fv-cancel')?.textContent === 'Click again to cancel the flow'`)
	if in, err := task.GetFlow(ctx, served, "stuck"); err != nil || in.State != task.FlowRunning {
		t.Fatalf("the flow after one click: %+v %v", in, err)
	}
	run(t, b, "cancel the flow", chromedp.Click(chromedp.CSS(`#fv-cancel`)))
	waitTrue(t, b, "the flow cancelled", `document.querySelector('#fv-meta [data-flow-state]')?.textContent === 'cancelled' && !document.querySelector('#fv-cancel') &&
		[...document.querySelectorAll('#flow-svg .flow-node')].map((g) => g.dataset.state).join() === 'cancelled,cancelled'`)
	readable("cancelled nodes")

	// Requeue on a failed node's task view resumes its flow.
	submit("resumed", map[string][]string{"flaky": nil, "then": {"flaky"}})
	run(t, b, "open the failed flow", chromedp.Navigate(srv.URL+"/#/flow/resumed"))
	waitTrue(t, b, "flaky failed", `document.querySelector('#flow-svg .flow-node[data-node="flaky"]')?.dataset.state === 'failed'`)
	readable("a failed node")
	run(t, b, "open the failed node's task", chromedp.Navigate(srv.URL+"/#/task/steps/flow%3Aresumed%3Aflaky"))
	waitTrue(t, b, "its Requeue button", `document.querySelector('#tv-state')?.textContent === 'failed' && document.querySelector('#tv-actions button[data-task-action="requeue"]')`)
	run(t, b, "requeue it", chromedp.Click(chromedp.CSS(`#tv-actions button[data-task-action="requeue"]`)))
	waitTrue(t, b, "it succeeded", `document.querySelector('#tv-state')?.textContent === 'succeeded'`)
	if in, err := task.WaitFlow(ctx, served, "resumed"); err != nil || in.State != task.FlowSucceeded {
		t.Fatalf("the resumed flow: %+v %v", in, err)
	}
}

// colourScheme makes the page's system colour scheme "dark" or "light".
func colourScheme(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	}); err != nil {
		t.Fatalf("colour scheme %s: %v", scheme, err)
	}
}
