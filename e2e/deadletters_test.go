package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// addDead writes a dead letter of processor billing for an order of
// customer, as the DeadLetter failure policy does, and returns its ID.
func (s *shop) addDead(ctx context.Context, customer string, n int) string {
	s.t.Helper()
	p, err := s.orders.Partition(order{Customer: customer})
	if err != nil {
		s.t.Fatal(err)
	}
	id, err := s.client.XAdd(ctx, &redis.XAddArgs{Stream: rdb.NewKeySpace(s.prefix, "shop").DeadLetter("orders", "billing"), Values: []any{
		"dead:stream", "orders", "dead:partition", fmt.Sprint(p), "dead:id", "1-1", "dead:processor", "billing",
		"dead:error", "card declined: order " + fmt.Sprint(n), "dead:time", time.Now().UTC().Format(time.RFC3339Nano), "dead:deliveries", "1",
		"key", customer, "codec", "json", "data", fmt.Sprintf(`{"customer":%q,"n":%d}`, customer, n),
	}}).Result()
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

// The dashboard shows each processor's dead-letter count; List shows its
// dead letters, Replay sends one back to its partition (the worker then
// processes it), Purge all deletes the rest after a second click; the
// buttons are disabled in read-only mode.
func TestDashboardDeadLetters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newShop(t, 4, 0)
	s.worker("w1")
	redistest.Eventually(t, 20*time.Second, "billing registered", func() bool { return len(s.report(ctx).Processors) == 1 })
	first := s.addDead(ctx, "ada", 100)
	s.addDead(ctx, "bob", 101)
	s.addDead(ctx, "cy", 102)
	srv := s.serve(api.Options{})
	b := browser(t)

	run(t, b, "open the overview", chromedp.Navigate(srv.URL+"/#/"), chromedp.WaitVisible(chromedp.CSS("#kpi-entries")))
	waitText(t, b, `#ov-procs td[data-dead="orders/billing"]`, func() string { return "3" })

	run(t, b, "open the stream", chromedp.Navigate(srv.URL+"/#/stream/orders"), chromedp.WaitVisible(chromedp.CSS("#stream-dead")))
	waitText(t, b, "#stream-dead .kpi-value", func() string { return "3" })
	run(t, b, "list the dead letters", chromedp.Click(chromedp.CSS(`#dead-list button[data-dead-action="list"]`)))
	waitTrue(t, b, "three dead letters listed", `document.querySelectorAll('#dead-list tr[data-dead-id]').length === 3 && document.querySelector('#dead-list').innerText.includes('card declined: order 100')`)

	partOf := func(customer string) string {
		p, _ := s.orders.Partition(order{Customer: customer})
		return rdb.NewKeySpace(s.prefix, "shop").Partition("orders", p)
	}
	before := s.client.XLen(ctx, partOf("ada")).Val()
	replay := fmt.Sprintf(`#dead-list button[data-dead-action="replay"][data-id="%s"]`, first)
	run(t, b, "replay one", chromedp.Click(chromedp.CSS(replay)))
	waitTrue(t, b, "the replay's toast", `document.querySelector('#toast').innerText.includes('Replayed dead letter `+first+`')`)
	waitTrue(t, b, "two dead letters listed", `document.querySelectorAll('#dead-list tr[data-dead-id]').length === 2`)
	if n := s.client.XLen(ctx, partOf("ada")).Val(); n != before+1 {
		t.Errorf("partition of ada holds %d entries, want %d", n, before+1)
	}
	waitText(t, b, "#stream-dead .kpi-value", func() string { return "2" })

	// Read-only: the buttons are there, disabled.
	ro := s.serve(api.Options{ReadOnly: true})
	rb := browser(t)
	run(t, rb, "open the stream read-only", chromedp.Navigate(ro.URL+"/#/stream/orders"), chromedp.WaitVisible(chromedp.CSS("#stream-dead")))
	waitTrue(t, rb, "the List button", `!!document.querySelector('#dead-list button[data-dead-action="list"]')`)
	run(t, rb, "list read-only", chromedp.Click(chromedp.CSS(`#dead-list button[data-dead-action="list"]`)))
	waitTrue(t, rb, "disabled Purge buttons", `document.querySelectorAll('#dead-list button[data-dead-action="purge"]').length === 2 && [...document.querySelectorAll('#dead-list button[data-dead-action="purge"]')].every((b) => b.disabled)`)

	// Purge all: the first click arms the button, the second purges.
	purgeAll := `#dead-list button[data-dead-bulk="purge"]`
	run(t, b, "arm Purge all", chromedp.Click(chromedp.CSS(purgeAll)))
	waitTrue(t, b, "the armed button", `document.querySelector('`+purgeAll+`').innerText.includes('Click again')`)
	if n := s.client.XLen(ctx, rdb.NewKeySpace(s.prefix, "shop").DeadLetter("orders", "billing")).Val(); n != 2 {
		t.Fatalf("%d dead letters after one click, want 2", n)
	}
	run(t, b, "purge all", chromedp.Click(chromedp.CSS(purgeAll)))
	waitTrue(t, b, "the purge's toast", `document.querySelector('#toast').innerText.includes('Purged 2 dead letters')`)
	waitTrue(t, b, "no dead letters listed", `document.querySelector('#dead-list').innerText.includes('no dead letters')`)
	if n := s.client.XLen(ctx, rdb.NewKeySpace(s.prefix, "shop").DeadLetter("orders", "billing")).Val(); n != 0 {
		t.Errorf("%d dead letters after Purge all", n)
	}
}
