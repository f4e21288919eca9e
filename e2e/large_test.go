package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// At 256 partitions over three workers, with traffic flowing, the stream
// view shows every partition in the heat map, names each one's owner on
// hover, and filters the table by worker. With LEAT_SCREENSHOT_256 set, the
// page first collects a minute of history, then its picture is saved there
// (docs/dashboard.png is made so).
func TestDashboard256(t *testing.T) {
	const partitions = 256
	docs := os.Getenv("LEAT_SCREENSHOT_256") != ""
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := newShop(t, partitions, 1000)
	s.prefetch = 4
	// One partition in four, picked at random, is slow, some slower than
	// orders arrive.
	perm := rand.New(rand.NewPCG(1, 2)).Perm(partitions)
	s.slow = func(p int) time.Duration {
		if perm[p]%4 != 0 {
			return 0
		}
		return time.Duration(perm[p]/4%4+1) * 150 * time.Millisecond
	}
	for _, w := range []string{"w1", "w2", "w3"} {
		s.worker(w)
	}

	// Three workers share the partitions.
	owners := func() map[string]int {
		rep := s.report(ctx)
		pr, _ := billing(rep, 0)
		o := map[string]int{}
		if pr == nil {
			return o // not registered yet
		}
		for _, p := range pr.Partitions {
			if p.Owner != nil {
				o[p.Owner.Worker]++
			}
		}
		return o
	}
	redistest.Eventually(t, 30*time.Second, "three workers own all partitions", func() bool {
		o := owners()
		return o["w1"] > 0 && o["w2"] > 0 && o["w3"] > 0 && o["w1"]+o["w2"]+o["w3"] == partitions
	})

	// Orders flow: about 500 a second over 2,000 customers, and a few of
	// the blocked customer's.
	pctx, stopProducer := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		n, pn := 0, 0 // the poison customer's order 0 fails
		for {
			var recs []order
			for range 128 {
				recs = append(recs, order{Customer: "c" + strconv.Itoa(rand.IntN(2000)), N: n})
				n++
			}
			for range 4 {
				recs = append(recs, order{Customer: s.blocked, N: n}, order{Customer: s.poison, N: pn})
				n++
				pn++
			}
			if _, err := s.orders.SendMany(pctx, recs); err != nil {
				return
			}
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { stopProducer(); wg.Wait() })

	// Tasks: some sent, a few dead, some due later.
	for i := range 40 {
		if _, err := s.emails.Enqueue(ctx, email{To: fmt.Sprintf("user%d@example.com", i)}); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Eventually(t, 20*time.Second, "sent", func() bool {
		n, _ := s.emails.Counts(ctx)
		return n[task.Succeeded] == 40
	})
	s.broken.Store(true)
	for i := range 3 {
		if _, err := s.emails.Enqueue(ctx, email{To: fmt.Sprintf("bounce%d@example.com", i)}); err != nil {
			t.Fatal(err)
		}
		_, _ = s.emails.Enqueue(ctx, email{To: fmt.Sprintf("later%d@example.com", i)}, task.Delay(time.Duration(i+1)*time.Hour))
	}

	redistest.Eventually(t, 10*time.Second, "a quarantined partition", func() bool {
		_, qp := billing(s.report(ctx), s.poisonP)
		return qp.Quarantine != nil
	})

	srv := s.serve(api.Options{Version: "v0.9.0"})
	b := browser(t)
	run(t, b, "open the stream view", chromedp.Navigate(srv.URL+"/#/stream/orders"), chromedp.WaitVisible(chromedp.CSS("#heat .cell")))
	if n := eval[int](t, b, `document.querySelectorAll('#heat .cell').length`); n != partitions {
		t.Fatalf("%d cells, want %d", n, partitions)
	}
	waitTrue(t, b, "the quarantined cell", `document.querySelector('#heat .cell.quarantined[data-p="`+strconv.Itoa(s.poisonP)+`"]')`)

	// Hovering a cell names its owner.
	_, p7 := billing(s.report(ctx), 7)
	xy := eval[[]float64](t, b, `(() => { const r = document.querySelector('#heat .cell[data-p="7"]').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`)
	run(t, b, "hover partition 7", chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]))
	waitTrue(t, b, "the owner in the tooltip", `!document.querySelector('#tip').hidden && document.querySelector('#tip').innerText.includes('partition 7') && document.querySelector('#tip').innerText.includes('owner `+p7.Owner.Worker+`')`)

	// Filtering by worker keeps that worker's partitions.
	run(t, b, "filter by w2", chromedp.SendKeys(chromedp.CSS("#filter"), "w2"))
	waitText(t, b, "#shown", func() string { return fmt.Sprintf("%d of %d partitions", owners()["w2"], partitions) })
	eval[bool](t, b, `(() => { const f = document.querySelector('#filter'); f.value = ''; return f.dispatchEvent(new Event('input')); })()`)
	waitText(t, b, "#shown", func() string { return fmt.Sprintf("%d partitions", partitions) })

	if docs {
		// The page's history spans a minute, for the charts.
		redistest.Eventually(t, 2*time.Minute, "a minute of history", func() bool {
			return eval[bool](t, b, `S.hist.length > 1 && S.hist[S.hist.length - 1].t - S.hist[0].t >= 60000`)
		})
		// The table with the partitions that lag most first.
		run(t, b, "sort by lag", chromedp.Click(chromedp.CSS(`#parts th[data-sort="lag"]`)))
		run(t, b, "scroll to the top", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.scrollTo(0, 0); document.activeElement.blur(); return true; })()`))
			return err
		}), chromedp.MouseEvent(chromedp.MouseMoved, 1430, 890))
		waitTrue(t, b, "no tooltip", `document.querySelector('#tip').hidden`)
	}
	// What a poll costs at 256 partitions, as the browser timed it (logged,
	// not asserted).
	t.Logf("requests of the page (count, mean ms): %s", eval[string](t, b, `(() => {
		const by = {};
		for (const e of performance.getEntriesByType('resource')) {
			const k = new URL(e.name).pathname.replace(/\/tasks.*$/, '/tasks');
			(by[k] = by[k] || []).push(e.duration);
		}
		return Object.entries(by).map(([k, d]) => k + ' ' + d.length + ' ' + (d.reduce((a, b) => a + b, 0) / d.length).toFixed(1)).join(', ');
	})()`))
	screenshot(t, b, "LEAT_SCREENSHOT_256")
	if docs {
		// The other views, beside it.
		base := strings.TrimSuffix(os.Getenv("LEAT_SCREENSHOT_256"), ".png")
		for _, v := range []struct{ hash, name, ready string }{{"#/", "overview", "#kpi-entries"}, {"#/queue/emails", "queue", "#count-dead"}} {
			run(t, b, "open "+v.name, chromedp.Navigate(srv.URL+"/"+v.hash), chromedp.WaitVisible(chromedp.CSS(v.ready)))
			waitTrue(t, b, "charts drawn", `document.querySelectorAll('.chart svg path').length > 0`)
			png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(base+"-"+v.name+".png", png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
