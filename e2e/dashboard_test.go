package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// num writes n as the dashboard does (en-US grouping).
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// processor returns the report of processor billing, and of its partition p.
func billing(rep *inspect.StreamReport, p int) (*inspect.ProcessorReport, *inspect.ProcessorPartition) {
	for i := range rep.Processors {
		if rep.Processors[i].Processor == "billing" {
			pr := &rep.Processors[i]
			for j := range pr.Partitions {
				if pr.Partitions[j].Partition == p {
					return pr, &pr.Partitions[j]
				}
			}
			return pr, nil
		}
	}
	return nil, nil
}

// The dashboard shows what Redis holds: the stream's length, a partition's
// lag and pending entries, the quarantined partition, a queue's counts per
// state; Requeue on a dead task runs it again; read-only mode disables the
// buttons; a token is asked for once.
func TestDashboard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	s := newShop(t, 16, 0)
	s.worker("w1")
	others := []string{"ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal"}
	s.send(ctx, append([]string{s.blocked, s.poison}, others...), 60)

	// Emails: three sent, one dead while the mail server is down, one due
	// in an hour.
	for _, to := range []string{"ada@example.com", "bob@example.com", "cy@example.com"} {
		id, _ := s.emails.Enqueue(ctx, email{To: to})
		if _, err := s.emails.Result(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s.broken.Store(true)
	dead, _ := s.emails.Enqueue(ctx, email{To: "dee@example.com"})
	if in, err := s.emails.Wait(ctx, dead); err != nil || in.State != task.Dead {
		t.Fatalf("%+v %v", in, err)
	}
	later, _ := s.emails.Enqueue(ctx, email{To: "eve@example.com"}, task.Delay(time.Hour))
	// A task ID of the caller's, longer than a column would show.
	const longID = "receipt-2026-11-29-customer-fay-at-example-com-order-000042"
	if _, err := s.emails.Enqueue(ctx, email{To: "fay@example.com"}, task.ID(longID), task.Delay(time.Hour)); err != nil {
		t.Fatal(err)
	}

	// The backlog settles: every partition done but the blocked one (lag
	// and pending) and the quarantined one.
	redistest.Eventually(t, 20*time.Second, "the backlog settled", func() bool {
		rep := s.report(ctx)
		pr, bp := billing(rep, s.blockedP)
		_, qp := billing(rep, s.poisonP)
		return pr != nil && bp != nil && bp.Lag != nil && *bp.Lag > 0 && bp.Pending > 0 && qp.Quarantine != nil && pr.Owned == s.partitions
	})

	t.Logf("settled at %s", time.Since(t0))
	srv := s.serve(api.Options{Version: "v9.9.9-test"})
	b := browser(t)

	// The stream view.
	run(t, b, "open the stream view", chromedp.Navigate(srv.URL+"/#/stream/orders"), chromedp.WaitVisible(chromedp.CSS("#stream-length")))
	waitText(t, b, "#stream-length .kpi-value", func() string { return num(s.report(ctx).Length) })
	lagCell := fmt.Sprintf(`#parts tr[data-partition="%d"] td[data-col="lag"]`, s.blockedP)
	waitText(t, b, lagCell, func() string {
		_, p := billing(s.report(ctx), s.blockedP)
		return num(*p.Lag)
	})
	waitText(t, b, fmt.Sprintf(`#parts tr[data-partition="%d"] td[data-col="pending"]`, s.blockedP), func() string {
		_, p := billing(s.report(ctx), s.blockedP)
		return num(p.Pending)
	})
	waitText(t, b, "#stream-lag .kpi-value", func() string {
		pr, _ := billing(s.report(ctx), 0)
		return num(*pr.Lag)
	})
	qrow := fmt.Sprintf(`#parts tr[data-partition="%d"]`, s.poisonP)
	waitTrue(t, b, "the quarantined partition stands out", `document.querySelector('`+qrow+`.row-bad') && document.querySelector('#heat .cell.quarantined[data-p="`+strconv.Itoa(s.poisonP)+`"]')`)
	if got := text(t, b, qrow+` td[data-col="status"]`); !strings.Contains(got, "quarantine") || !strings.Contains(got, "card declined") {
		t.Errorf("status of the quarantined partition: %q", got)
	}
	if got := text(t, b, "#stream-quarantined .kpi-value"); got != "1" {
		t.Errorf("quarantined figure %q, want 1", got)
	}
	if got := text(t, b, "#st-tables"); got != "tables orders-per-customer (msgpack)" {
		t.Errorf("the processor's tables: %q", got)
	}
	cells := eval[int](t, b, `document.querySelectorAll('#heat .cell').length`)
	if cells != s.partitions {
		t.Errorf("%d cells in the heat map, want %d", cells, s.partitions)
	}
	// The scale is absolute, by powers of ten, with its legend: the blocked
	// partition's colour is its lag's step whatever the others hold; every
	// partition number reads on its colour (contrast 4.2:1 or more).
	waitTrue(t, b, "the lag scale's legend", `document.querySelectorAll('#heat-scale .lg-step').length === 7 && document.querySelector('#heat-scale').innerText.includes('1k–9.9k')`)
	steps := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('#heat-scale .lg-step')].map((s) => [s.innerText.trim().split(/\s+/)[0], getComputedStyle(s.querySelector('.swatch')).backgroundColor]))`)
	_, bp := billing(s.report(ctx), s.blockedP)
	want := map[bool]string{true: "1–9", false: "10–99"}[*bp.Lag < 10]
	if *bp.Lag >= 100 {
		want = "100–999"
	}
	if got := eval[string](t, b, fmt.Sprintf(`getComputedStyle(document.querySelector('#heat .cell[data-p="%d"]')).backgroundColor`, s.blockedP)); got != steps[want] {
		t.Errorf("the blocked partition (lag %d) is %s, want step %s's %s (steps %v)", *bp.Lag, got, want, steps[want], steps)
	}
	for _, mode := range []string{"lag", "pending", "owner"} {
		run(t, b, "colour by "+mode, chromedp.Click(chromedp.CSS(`#colour-by button[data-colour="`+mode+`"]`)))
		if low := eval[[]string](t, b, `(() => {
			const lum = (css) => { const [r, g, b] = css.match(/\d+/g).map(Number).map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
				return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
			return [...document.querySelectorAll('#heat .cell')].filter((c) => {
				const s = c.querySelector('span');
				if (!s || getComputedStyle(s).display === 'none') return false;
				const a = lum(getComputedStyle(c).backgroundColor), b = lum(getComputedStyle(s).color);
				return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) < 4.2;
			}).map((c) => c.dataset.p + ' ' + getComputedStyle(c).backgroundColor + ' ' + getComputedStyle(c.querySelector('span')).color);
		})()`); len(low) > 0 {
			t.Errorf("colour by %s: partition numbers hard to read: %v", mode, low)
		}
	}
	run(t, b, "colour by lag", chromedp.Click(chromedp.CSS(`#colour-by button[data-colour="lag"]`)))
	// Sorting by lag puts the partition with the most lag first; a filter
	// keeps one row.
	run(t, b, "sort by lag", chromedp.Click(chromedp.CSS(`#parts th[data-sort="lag"]`)))
	waitText(t, b, `#parts tbody tr:first-child td[data-col="partition"]`, func() string {
		pr, _ := billing(s.report(ctx), 0)
		most := pr.Partitions[0]
		for _, p := range pr.Partitions {
			if p.Lag != nil && (most.Lag == nil || *p.Lag > *most.Lag) {
				most = p
			}
		}
		return strconv.Itoa(most.Partition)
	})
	run(t, b, "filter", chromedp.SendKeys(chromedp.CSS("#filter"), strconv.Itoa(s.poisonP)))
	waitTrue(t, b, "one row left", `document.querySelectorAll('#parts tbody tr').length === 1 && document.querySelector('`+qrow+`')`)

	// The overview.
	run(t, b, "open the overview", chromedp.Navigate(srv.URL+"/#/"), chromedp.WaitVisible(chromedp.CSS("#kpi-entries")))
	waitText(t, b, "#kpi-entries .kpi-value", func() string { return num(s.report(ctx).Length) })
	waitText(t, b, "#kpi-quarantined .kpi-value", func() string { return "1" })
	waitTrue(t, b, "the warning of the quarantine", `document.querySelector('#warnings') && document.querySelector('#warnings').innerText.includes('quarantine')`)
	waitTrue(t, b, "the worker and the leader", `document.querySelector('#ov-workers').innerText.includes('w1') && document.querySelector('#ov-leader').innerText.includes('w1')`)
	// The worker's rows: its executor, and the task queue it works for.
	waitTrue(t, b, "the worker's task queue", `document.querySelector('#ov-workers [data-running="emails"]') && document.querySelector('#ov-workers').innerText.includes('task queue emails')`)
	// No overview table is cut off behind a sideways scroll bar, on a
	// laptop's screen or a wide one: the streams and task-queue tables go
	// side by side only when both have room for all their columns.
	for _, width := range []int64{1280, 1440, 1920} {
		run(t, b, "resize", chromedp.EmulateViewport(width, 900))
		if cut := eval[[]string](t, b, `[...document.querySelectorAll('#view .table-wrap')]
			.filter((w) => w.scrollWidth > w.clientWidth + 1)
			.map((w) => w.parentElement.closest('[id]').id + ' (' + w.scrollWidth + ' of ' + w.clientWidth + ' pixels)')`); len(cut) > 0 {
			t.Errorf("overview tables that scroll sideways %d pixels wide: %v", width, cut)
		}
		// The figures fill their rows: none left alone on the last one.
		rows := eval[[]int](t, b, `(() => {
			const rows = new Map();
			for (const k of document.querySelectorAll('#ov-kpis .kpi')) rows.set(k.offsetTop, (rows.get(k.offsetTop) || 0) + 1);
			return [...rows.values()];
		})()`)
		if len(rows) == 0 || (len(rows) > 1 && rows[len(rows)-1] != rows[0]) {
			t.Errorf("overview figures per row %d pixels wide: %v, want rows of equal length", width, rows)
		}
	}
	run(t, b, "size back", chromedp.EmulateReset())
	if v := text(t, b, "#version"); v != "leat v9.9.9-test" {
		t.Errorf("version %q", v)
	}

	// Read-only: the buttons are there, disabled.
	ro := s.serve(api.Options{ReadOnly: true})
	rb := browser(t)
	run(t, rb, "open the queue read-only", chromedp.Navigate(ro.URL+"/#/queue/emails"), chromedp.WaitVisible(chromedp.CSS("#count-dead")))
	requeueBtn := fmt.Sprintf(`button[data-action="requeue"][data-id="%s"]`, dead)
	waitTrue(t, rb, "a disabled Requeue button", `document.querySelector('#read-only') && document.querySelector('`+requeueBtn+`') && document.querySelector('`+requeueBtn+`').disabled`)
	run(t, rb, "list scheduled tasks", chromedp.Click(chromedp.CSS(`#list-tabs button[data-list="scheduled"]`)))
	cancelBtn := fmt.Sprintf(`button[data-action="cancel"][data-id="%s"]`, later)
	waitTrue(t, rb, "a disabled Cancel button", `document.querySelector('`+cancelBtn+`') && document.querySelector('`+cancelBtn+`').disabled`)
	// A task ID is shown whole, and can be copied whole.
	longLink := `#task-list a[data-open="` + longID + `"]`
	waitTrue(t, rb, "the long task ID listed", `!!document.querySelector('`+longLink+`')`)
	if got := text(t, rb, longLink); got != longID {
		t.Errorf("task ID shown as %q, want %q whole", got, longID)
	}
	if w := eval[[]int](t, rb, `[document.querySelector('`+longLink+`').scrollWidth, document.querySelector('`+longLink+`').clientWidth]`); w[0] > w[1]+1 {
		t.Errorf("the task ID is cut: %d of %d pixels shown", w[1], w[0])
	}
	copyBtn := `#task-list button[data-copy="` + longID + `"]`
	run(t, rb, "copy the ID", chromedp.Click(chromedp.CSS(copyBtn)))
	waitTrue(t, rb, "the ID copied or selected", `['copied', 'selected'].includes(document.querySelector('`+copyBtn+`').innerText) && (document.querySelector('`+copyBtn+`').innerText === 'copied' || getSelection().toString() === `+jsString(longID)+`)`)

	// The queue: counts per state as Redis keeps them; Requeue runs the
	// dead task again, and now it succeeds.
	run(t, b, "open the queue", chromedp.Navigate(srv.URL+"/#/queue/emails"), chromedp.WaitVisible(chromedp.CSS("#count-dead")))
	waitTrue(t, b, "the queue's worker, alive", `document.querySelector('#q-workers tr[data-worker="w1"]') && document.querySelector('#q-workers tr[data-worker="w1"]').innerText.includes('alive')`)
	counts := func() map[task.State]int64 {
		n, err := s.emails.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, st := range task.States {
		waitText(t, b, "#count-"+string(st)+" .kpi-value", func() string { return num(counts()[st]) })
	}
	if n := counts(); n[task.Dead] != 1 || n[task.Succeeded] != 3 || n[task.Scheduled] != 2 {
		t.Errorf("counts %v", n)
	}
	// A task's detail: listings carry no payload; a click on the task's ID
	// loads it, with the whole error, and a second click closes it.
	opener := fmt.Sprintf(`#task-list a[data-open="%s"]`, dead)
	detail := fmt.Sprintf(`#task-list tr[data-detail="%s"]`, dead)
	waitTrue(t, b, "the dead task listed", `!!document.querySelector('`+opener+`')`)
	run(t, b, "open the dead task", chromedp.Click(chromedp.CSS(opener)))
	waitTrue(t, b, "its payload and error", `(() => { const p = document.querySelector('`+detail+` pre[data-field="payload"]'), e = document.querySelector('`+detail+` pre[data-field="error"]');
		return !!p && p.innerText.includes('dee@example.com') && !!e && e.innerText.length > 0; })()`)
	run(t, b, "close the dead task", chromedp.Click(chromedp.CSS(opener)))
	waitTrue(t, b, "its detail closed", `!document.querySelector('`+detail+`')`)

	s.broken.Store(false)
	waitTrue(t, b, "an enabled Requeue button", `document.querySelector('`+requeueBtn+`') && !document.querySelector('`+requeueBtn+`').disabled`)
	run(t, b, "click Requeue", chromedp.Click(chromedp.CSS(requeueBtn)))
	redistest.Eventually(t, 10*time.Second, "the requeued task succeeded", func() bool {
		in, err := s.emails.Info(ctx, dead)
		return err == nil && in.State == task.Succeeded
	})
	if in, err := s.emails.Info(ctx, dead); err != nil || in.Attempts != 1 || string(in.Result) != `"sent to dee@example.com"` {
		t.Fatalf("requeued task: %+v %v", in, err)
	}
	waitTrue(t, b, "the toast", `document.querySelector('#toast').innerText.includes('Requeued task `+dead+`')`)
	waitText(t, b, "#count-dead .kpi-value", func() string { return num(counts()[task.Dead]) })
	waitText(t, b, "#count-succeeded .kpi-value", func() string { return "4" })
	waitTrue(t, b, "no dead task listed", `document.querySelector('#task-list').innerText.includes('no dead tasks')`)

	// Delete: the requeued task, now succeeded, from the recent ones.
	run(t, b, "list recent tasks", chromedp.Click(chromedp.CSS(`#list-tabs button[data-list="recent"]`)))
	deleteBtn := fmt.Sprintf(`button[data-action="delete"][data-id="%s"]`, dead)
	waitTrue(t, b, "a Delete button", `document.querySelector('`+deleteBtn+`') && !document.querySelector('`+deleteBtn+`').disabled`)
	run(t, b, "click Delete", chromedp.Click(chromedp.CSS(deleteBtn)))
	redistest.Eventually(t, 10*time.Second, "the task deleted", func() bool {
		_, err := s.emails.Info(ctx, dead)
		return errors.Is(err, task.ErrNotFound)
	})
	waitTrue(t, b, "the delete's toast", `document.querySelector('#toast').innerText.includes('Deleted task `+dead+`')`)
	waitTrue(t, b, "the task gone from the list", `!document.querySelector('`+deleteBtn+`')`)

	// Delete all dead: the first click arms the button, the second deletes.
	s.broken.Store(true)
	for _, to := range []string{"fay@example.com", "gus@example.com"} {
		id, _ := s.emails.Enqueue(ctx, email{To: to})
		if in, err := s.emails.Wait(ctx, id); err != nil || in.State != task.Dead {
			t.Fatalf("%+v %v", in, err)
		}
	}
	s.broken.Store(false)
	run(t, b, "list dead tasks", chromedp.Click(chromedp.CSS(`#list-tabs button[data-list="dead"]`)))
	const deleteAll = `button[data-bulk="delete"]`
	run(t, rb, "list dead tasks read-only", chromedp.Click(chromedp.CSS(`#list-tabs button[data-list="dead"]`)))
	waitTrue(t, rb, "a disabled Delete all dead button", `document.querySelector('`+deleteAll+`') && document.querySelector('`+deleteAll+`').disabled`)
	waitTrue(t, b, "a Delete all dead button", `document.querySelector('`+deleteAll+`') && document.querySelector('`+deleteAll+`').innerText === 'Delete all dead'`)
	run(t, b, "click Delete all dead", chromedp.Click(chromedp.CSS(deleteAll)))
	waitTrue(t, b, "the button armed", `document.querySelector('`+deleteAll+`').innerText.startsWith('Click again')`)
	if n := counts()[task.Dead]; n != 2 {
		t.Fatalf("%d dead tasks after one click, want 2", n)
	}
	run(t, b, "click Delete all dead again", chromedp.Click(chromedp.CSS(deleteAll)))
	redistest.Eventually(t, 10*time.Second, "the dead tasks deleted", func() bool { return counts()[task.Dead] == 0 })
	waitTrue(t, b, "the bulk delete's toast", `document.querySelector('#toast').innerText.includes('Deleted 2 dead tasks of emails')`)
	waitTrue(t, b, "no dead task listed", `document.querySelector('#task-list').innerText.includes('no dead tasks')`)

	// Pause and Resume: the queue says it is paused, here and in the nav.
	waitTrue(t, rb, "a disabled Pause button", `document.querySelector('button[data-queue-action="pause"]') && document.querySelector('button[data-queue-action="pause"]').disabled`)
	run(t, b, "click Pause", chromedp.Click(chromedp.CSS(`button[data-queue-action="pause"]`)))
	redistest.Eventually(t, 10*time.Second, "the queue paused", func() bool {
		paused, _, err := s.emails.Paused(ctx)
		return err == nil && paused
	})
	waitTrue(t, b, "the paused banner", `document.querySelector('#q-paused-banner') && document.querySelector('#q-paused-banner').innerText.includes('Paused since') && !document.querySelector('#q-paused-banner').innerText.includes('<span')`)
	waitTrue(t, b, "paused in the nav", `document.querySelector('#nav').innerText.includes('paused')`)
	screenshot(t, b, "LEAT_SCREENSHOT_PAUSED")
	// A poll that changes nothing leaves the Resume button in place (a
	// click pressed as a poll lands is not lost with the node it was
	// pressed on), while the pause's age moves on in it.
	if !eval[bool](t, b, `(() => { window.resumeButton = document.querySelector('button[data-queue-action="resume"]'); window.pollSeen = S.lastOK; return true })()`) {
		t.Fatal("no Resume button")
	}
	waitTrue(t, b, "the paused banner after another poll", `S.lastOK > window.pollSeen && /Paused since \d\d:\d\d:\d\d \([^)]* ago\)/.test(document.querySelector('#q-paused-banner').innerText)`)
	if !eval[bool](t, b, `window.resumeButton.isConnected`) {
		t.Fatal("a poll that changed nothing replaced the Resume button")
	}
	run(t, b, "click Resume", chromedp.Click(chromedp.CSS(`button[data-queue-action="resume"]`)))
	redistest.Eventually(t, 10*time.Second, "the queue resumed", func() bool {
		paused, _, err := s.emails.Paused(ctx)
		return err == nil && !paused
	})
	waitTrue(t, b, "the Pause button back", `!document.querySelector('#q-paused-banner') && document.querySelector('button[data-queue-action="pause"]') && !document.querySelector('#nav').innerText.includes('paused')`)

	// A rate limit set live from the form, refused when its window is not a
	// duration, then cleared: the workers' own (none here) applies again.
	waitTrue(t, rb, "a disabled rate form", `document.querySelector('#q-rate button[type="submit"]') && document.querySelector('#q-rate button[type="submit"]').disabled`)
	liveRate := func() (task.RateLimit, bool) {
		r, set, err := s.emails.LiveRate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r, set
	}
	run(t, b, "give a rate that is not one", chromedp.SetValue(chromedp.CSS("#q-rate-n"), "50"), chromedp.SetValue(chromedp.CSS("#q-rate-window"), "soon"),
		chromedp.Click(chromedp.CSS(`#q-rate button[type="submit"]`)))
	waitTrue(t, b, "the refusal's toast", `document.querySelector('#toast').innerText.includes('rate of emails') && document.querySelector('#toast').innerText.includes('duration')`)
	if _, set := liveRate(); set {
		t.Fatal("a refused rate was set")
	}
	run(t, b, "set a rate", chromedp.SetValue(chromedp.CSS("#q-rate-window"), "2s"), chromedp.Click(chromedp.CSS(`#q-rate button[type="submit"]`)))
	redistest.Eventually(t, 10*time.Second, "the rate set live", func() bool {
		r, set := liveRate()
		return set && r == (task.RateLimit{N: 50, Window: 2 * time.Second})
	})
	waitTrue(t, b, "the rate shown as set live", `document.querySelector('#q-meta').innerText.includes('50 / 2s (set live)')`)
	run(t, b, "clear the rate", chromedp.Click(chromedp.CSS(`#q-rate button[data-rate-clear]`)))
	redistest.Eventually(t, 10*time.Second, "the rate cleared", func() bool { _, set := liveRate(); return !set })
	waitTrue(t, b, "no rate shown", `!document.querySelector('#q-meta').innerText.includes('rate') && document.querySelector('#q-rate button[data-rate-clear]').hidden`)

	// A concurrency set live shows among the settings.
	if err := s.emails.SetConcurrency(ctx, 7); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, b, "the concurrency shown as set live", `document.querySelector('#q-meta').innerText.includes('7 / worker (set live)')`)
	if err := s.emails.ClearConcurrency(ctx); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, b, "the program's concurrency shown", `!document.querySelector('#q-meta').innerText.includes('set live')`)

	t.Logf("requeued at %s", time.Since(t0))
	run(t, b, "back to the stream", chromedp.Navigate(srv.URL+"/#/stream/orders"), chromedp.WaitVisible(chromedp.CSS("#heat .cell")))
	screenshot(t, b, "LEAT_SCREENSHOT")
}

// With a token, the page asks for it once and keeps it for the tab.
func TestDashboardToken(t *testing.T) {
	s := newShop(t, 4, 0)
	srv := s.serve(api.Options{Token: "s3cret"})
	b := browser(t)
	run(t, b, "open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#login-token")))
	run(t, b, "give a wrong token", chromedp.SendKeys(chromedp.CSS("#login-token"), "wrong"), chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	waitTrue(t, b, "the token refused", `document.querySelector('#login').open && !document.querySelector('#login-error').hidden`)
	run(t, b, "give the token", chromedp.SetValue(chromedp.CSS("#login-token"), "s3cret"), chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)))
	waitText(t, b, "#app-name", func() string { return "shop" })
	run(t, b, "reload", chromedp.Reload())
	waitText(t, b, "#app-name", func() string { return "shop" })
	if eval[bool](t, b, `document.querySelector('#login').open`) {
		t.Error("the page asked for the token again after a reload")
	}
}

// While the tab is hidden the page reads nothing; shown again, it reads at
// once.
func TestDashboardPausesWhenHidden(t *testing.T) {
	s := newShop(t, 4, 0)
	srv := s.serve(api.Options{})
	b := browser(t)
	run(t, b, "open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#kpi-entries")))
	waitText(t, b, "#live-text", func() string { return "live" })
	eval[bool](t, b, `(() => {
		window.fetches = 0;
		const f = window.fetch;
		window.fetch = (...a) => { window.fetches++; return f(...a); };
		Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
		return document.dispatchEvent(new Event('visibilitychange'));
	})()`)
	waitText(t, b, "#live-text", func() string { return "paused" })
	// A poll, due or not, reads nothing while hidden.
	n, err := chromedp.Run(b, chromedp.Evaluate[int](`(async () => {
		while (S.busy) await new Promise((r) => setTimeout(r, 10));
		const n = window.fetches;
		await poll();
		return window.fetches - n;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil || n != 0 {
		t.Fatalf("a poll while hidden made %d requests (%v)", n, err)
	}
	before := eval[int](t, b, `window.fetches`)
	eval[bool](t, b, `(() => {
		Object.defineProperty(document, 'hidden', { configurable: true, get: () => false });
		return document.dispatchEvent(new Event('visibilitychange'));
	})()`)
	waitTrue(t, b, "reading again", `window.fetches > `+strconv.Itoa(before))
	waitText(t, b, "#live-text", func() string { return "live" })
}
