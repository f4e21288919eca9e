package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

type opJob struct {
	Fail bool `json:"fail"`
}

// A queue's clean-up and live events from the dashboard: events turned on
// from their panel, then a task's transitions shown as they happen (its ID
// linking to its view, an error as text, never markup), no more than 200
// rows kept; a clean of the succeeded tasks older than 0s; a drain of a
// queue whose tasks wait (its counts go to 0); an obliterate refused while
// a worker runs the queue, with the API's message, then forced.
func TestDashboardQueueOps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := newOpsEnv(t, ctx)
	served, jobs, backlog := env.served, env.jobs, env.backlog
	srv := httptest.NewServer(api.NewHandler(served, api.Options{}))
	t.Cleanup(srv.Close)
	b := browser(t)

	// Events are off: the panel says so and offers to turn them on.
	run(t, b, "open queue jobs", chromedp.Navigate(srv.URL+"/#/queue/jobs"), chromedp.WaitVisible(chromedp.CSS("#q-ev-off")))
	if got := text(t, b, "#q-ev-off"); got == "" {
		t.Fatal("no word that events are off")
	}
	run(t, b, "turn events on", chromedp.Click(chromedp.CSS(`#q-ev-toggle[data-events="on"]`)))
	waitTrue(t, b, "the events followed", `document.querySelector('#q-ev-status')?.dataset.state === 'live'`)
	if n, err := jobs.EventsCap(ctx); err != nil || n != task.DefaultEventsCap {
		t.Fatalf("events cap after the click: %d, %v", n, err)
	}

	// A task's transitions, newest first, its ID linking to its view.
	id, err := jobs.Enqueue(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	rows := func(id string) string {
		return eval[string](t, b, `[...document.querySelectorAll('#q-ev-rows tr[data-task=`+jsString(id)+`]')].reverse()
			.map((r) => r.children[3].textContent + '>' + r.children[2].textContent + '#' + r.children[4].textContent).join(' ')`)
	}
	redistest.Eventually(t, 15*time.Second, "the task's transitions in the events panel", func() bool {
		return rows(id) == "new>pending#0 pending>active#1 active>succeeded#1"
	})
	if href := eval[string](t, b, `document.querySelector('#q-ev-rows tr[data-task=`+jsString(id)+`] a').getAttribute('href')`); href != "#/task/jobs/"+id {
		t.Errorf("task link %q", href)
	}
	// An error is shown as text.
	bad, err := jobs.Enqueue(ctx, json.RawMessage(`{"fail":true}`))
	if err != nil {
		t.Fatal(err)
	}
	waitTrue(t, b, "the failure in the events panel", `[...document.querySelectorAll('#q-ev-rows tr[data-task=`+jsString(bad)+`][data-state="failed"] td.err')].some((td) => td.textContent.includes('<b id="injected">'))`)
	if eval[bool](t, b, `!!document.getElementById('injected')`) {
		t.Fatal("an error from Redis was read as markup")
	}
	// At most 200 rows, however many events come.
	many := make([]json.RawMessage, 100)
	for i := range many {
		many[i] = json.RawMessage(`{}`)
	}
	if _, err := jobs.EnqueueMany(ctx, many); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 20*time.Second, "the 100 tasks succeeded", func() bool {
		n, err := jobs.Counts(ctx)
		return err == nil && n[task.Succeeded] == 101
	})
	waitTrue(t, b, "the newest event shown", `(() => { const r = document.querySelector('#q-ev-rows tr'); return r && r.dataset.state === 'succeeded'; })()`)
	if n := eval[int](t, b, `document.querySelectorAll('#q-ev-rows tr').length`); n != 200 {
		t.Errorf("%d rows of events, want the last 200 of more than 300", n)
	}
	screenshot(t, b, "LEAT_QUEUE_SCREENSHOT")

	// Hidden, the page stops following; shown again, it resumes after the
	// last event it showed, missing none.
	run(t, b, "hide the page", chromedp.Evaluate[chromedp.Void](`Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
		document.dispatchEvent(new Event('visibilitychange'))`))
	if got := eval[string](t, b, `Q.ev.open + ' ' + document.querySelector('#q-ev-status').dataset.state`); got != "false paused" {
		t.Fatalf("hidden page: following %q, want false paused", got)
	}
	hid, err := jobs.Enqueue(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the task enqueued while hidden succeeded", func() bool {
		in, err := jobs.Info(ctx, hid)
		return err == nil && in.State == task.Succeeded
	})
	run(t, b, "show the page", chromedp.Evaluate[chromedp.Void](`delete document.hidden; document.dispatchEvent(new Event('visibilitychange'))`))
	redistest.Eventually(t, 15*time.Second, "the transitions of the task enqueued while hidden", func() bool {
		return rows(hid) == "new>pending#0 pending>active#1 active>succeeded#1"
	})
	// Another view closes the stream.
	run(t, b, "open the overview", chromedp.Navigate(srv.URL+"/#/"), chromedp.WaitVisible(chromedp.CSS("#kpi-entries")))
	waitTrue(t, b, "the events no longer followed", `Q.ev && Q.ev.open === false`)
	run(t, b, "back to queue jobs", chromedp.Navigate(srv.URL+"/#/queue/jobs"), chromedp.WaitVisible(chromedp.CSS("#q-clean-go")))

	// Clean the succeeded tasks that ended at least 0s ago.
	run(t, b, "clean succeeded tasks",
		chromedp.SetValue(chromedp.CSS("#q-clean-state"), "succeeded"),
		chromedp.SetValue(chromedp.CSS("#q-clean-age"), "0s"),
		chromedp.Click(chromedp.CSS("#q-clean-go")))
	waitText(t, b, "#q-ops-msg", func() string { return "Cleaned jobs: deleted 102 succeeded tasks ended at least 0s ago" })
	waitText(t, b, "#count-succeeded .kpi-value", func() string { return "0" })
	if n, _ := jobs.Counts(ctx); n[task.Succeeded] != 0 || n[task.Failed] != 1 {
		t.Errorf("counts after the clean: %v", n)
	}
	// A bad age: the API's message as text.
	run(t, b, "clean with a bad age", chromedp.SetValue(chromedp.CSS("#q-clean-age"), "soon"), chromedp.Click(chromedp.CSS("#q-clean-go")))
	waitTrue(t, b, "the API's refusal", `document.querySelector('#q-ops-msg').textContent.includes('field "older_than" "soon"')`)

	// Drain backlog: 3 pending and 2 scheduled tasks, at the second click.
	for i := range 5 {
		var opts []task.EnqueueOption
		if i >= 3 {
			opts = append(opts, task.Delay(time.Hour))
		}
		if _, err := backlog.Enqueue(ctx, opJob{}, opts...); err != nil {
			t.Fatal(err)
		}
	}
	run(t, b, "open queue backlog", chromedp.Navigate(srv.URL+"/#/queue/backlog"), chromedp.WaitVisible(chromedp.CSS("#q-drain")))
	waitText(t, b, "#count-pending .kpi-value", func() string { return "3" })
	waitText(t, b, "#count-scheduled .kpi-value", func() string { return "2" })
	run(t, b, "arm Drain", chromedp.Click(chromedp.CSS("#q-drain")))
	waitText(t, b, "#q-drain", func() string { return "Click again to drain 5 waiting tasks" })
	if n, _ := backlog.Counts(ctx); n[task.Pending] != 3 {
		t.Fatalf("a first click drained: %v", n)
	}
	run(t, b, "drain", chromedp.Click(chromedp.CSS("#q-drain")))
	waitText(t, b, "#q-ops-msg", func() string { return "Drained backlog: deleted 5 waiting tasks" })
	waitText(t, b, "#count-pending .kpi-value", func() string { return "0" })
	waitText(t, b, "#count-scheduled .kpi-value", func() string { return "0" })

	// Obliterate jobs: its name typed, refused while w1 runs it, then forced.
	run(t, b, "open queue jobs", chromedp.Navigate(srv.URL+"/#/queue/jobs"), chromedp.WaitVisible(chromedp.CSS("#q-obl-name")))
	if !eval[bool](t, b, `document.querySelector('#q-obl-go').disabled`) {
		t.Fatal("Obliterate enabled before the name was typed")
	}
	run(t, b, "type a wrong name", chromedp.SendKeys(chromedp.CSS("#q-obl-name"), "job"))
	if !eval[bool](t, b, `document.querySelector('#q-obl-go').disabled`) {
		t.Fatal("Obliterate enabled by a wrong name")
	}
	if !eval[bool](t, b, `document.querySelector('#q-obl-running').hidden`) {
		t.Fatal("force offered before any refusal")
	}
	run(t, b, "type the name", chromedp.SendKeys(chromedp.CSS("#q-obl-name"), "s"), chromedp.Click(chromedp.CSS("#q-obl-go")))
	waitTrue(t, b, "the refusal and the force button", `!document.querySelector('#q-obl-running').hidden`)
	if got := text(t, b, "#q-obl-running-text"); !strings.Contains(got, "worker") {
		t.Errorf("the refusal reads %q, want the API's message", got)
	}
	if qs, _ := task.Queues(ctx, served); len(qs) != 2 {
		t.Fatalf("queues after a refused obliterate: %v", qs)
	}
	run(t, b, "force", chromedp.Click(chromedp.CSS("#q-obl-force")))
	waitTrue(t, b, "back to the overview", `location.hash === '#/'`)
	redistest.Eventually(t, 10*time.Second, "jobs gone", func() bool {
		qs, err := task.Queues(ctx, served)
		return err == nil && !slices.ContainsFunc(qs, func(d task.Definition) bool { return d.Name == "jobs" })
	})
}

// opsEnv is an app whose worker w1 runs queue jobs (a task fails when its
// payload says so, with markup in its error) and whose queue backlog is
// declared and never run.
type opsEnv struct {
	served  *app.App
	jobs    *task.Queue[json.RawMessage, json.RawMessage]
	backlog *task.Queue[opJob, string]
}

func newOpsEnv(t *testing.T, ctx context.Context) opsEnv {
	t.Helper()
	c, prefix := redistest.Client(t)
	newApp := func(worker string) *app.App {
		a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, WorkerID: worker, Logger: quiet(), LeaderLease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	w := newApp("w1")
	_, err := task.Handle(w, "jobs", func(ctx context.Context, tk *task.Task[opJob]) (string, error) {
		if tk.Payload.Fail {
			return "", task.SkipRetry(errors.New(`<b id="injected">no</b>`))
		}
		return "ok", nil
	}, task.MaxRetries(0), task.Concurrency(8))
	if err != nil {
		t.Fatal(err)
	}
	// backlog: declared, never run.
	prod := newApp("producer")
	backlog, err := task.Declare[opJob, string](prod, "backlog")
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Register(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Run(wctx) }()
	t.Cleanup(func() { stop(); wg.Wait() })

	served := newApp("api")
	redistest.Eventually(t, 10*time.Second, "queues jobs and backlog registered", func() bool {
		qs, _ := task.Queues(ctx, served)
		return len(qs) == 2
	})
	jobs, err := task.Lookup(ctx, served, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	return opsEnv{served: served, jobs: jobs, backlog: backlog}
}

// With a token, which an EventSource cannot send, the page reads the events
// with fetch; read-only, every button of the clean-up and events panels is
// disabled.
func TestDashboardQueueEventsTokenAndReadOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := newOpsEnv(t, ctx)
	if err := env.jobs.SetEvents(ctx, 0); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(env.served, api.Options{Token: "s3cret"}))
	t.Cleanup(srv.Close)
	b := browser(t)
	run(t, b, "open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#login-token")))
	run(t, b, "give the token", chromedp.SetValue(chromedp.CSS("#login-token"), "s3cret"), chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	waitText(t, b, "#app-name", func() string { return "shop" })
	run(t, b, "open queue jobs", chromedp.Navigate(srv.URL+"/#/queue/jobs"), chromedp.WaitVisible(chromedp.CSS("#q-ev-status")))
	waitTrue(t, b, "the events followed", `document.querySelector('#q-ev-status')?.dataset.state === 'live'`)
	id, err := env.jobs.Enqueue(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 15*time.Second, "the task's transitions read with the token", func() bool {
		return eval[string](t, b, `[...document.querySelectorAll('#q-ev-rows tr[data-task=`+jsString(id)+`]')].reverse().map((r) => r.dataset.state).join(' ')`) == "pending active succeeded"
	})

	ro := httptest.NewServer(api.NewHandler(env.served, api.Options{ReadOnly: true}))
	t.Cleanup(ro.Close)
	rb := browser(t)
	run(t, rb, "open queue jobs read-only", chromedp.Navigate(ro.URL+"/#/queue/jobs"), chromedp.WaitVisible(chromedp.CSS("#q-drain")))
	for _, sel := range []string{"#q-drain", "#q-clean-go", "#q-clean-age", "#q-obl-name", "#q-obl-go", "#q-ev-toggle"} {
		if !eval[bool](t, rb, `document.querySelector(`+jsString(sel)+`).disabled`) {
			t.Errorf("%s enabled in read-only mode", sel)
		}
	}
}
