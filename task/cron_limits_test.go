package task

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// Starting, Until and Times limit a schedule: its ticks start at Starting,
// stop after Until, and number Times in all, counted in Redis so that a new
// leader neither runs the count again nor goes past it.
func TestCronLimits(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Handle(a, "hourly", func(ctx context.Context, tk *Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	at := func(h int) time.Time { return time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC) }
	for _, bad := range []struct {
		opts []EnqueueOption
		want string
	}{
		{[]EnqueueOption{Times(0)}, "Times(0)"},
		{[]EnqueueOption{Starting(at(5)), Until(at(4))}, "is before Starting"},
	} {
		if err := q.Cron("bad", "0 * * * *", 1, bad.opts...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("Cron with %s: %v", bad.want, err)
		}
	}
	if _, err := q.Enqueue(context.Background(), 1, Times(2)); err == nil || !strings.Contains(err.Error(), "options of Cron") {
		t.Fatalf("Enqueue with Times: %v", err)
	}
	if err := q.Cron("counted", "0 * * * *", 1, Starting(at(5)), Until(at(9)), Times(3)); err != nil {
		t.Fatal(err)
	}
	if err := q.Cron("ends", "0 * * * *", 2, Until(at(6))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := func(name string, h int) string {
		return ReservedIDPrefix + name + ":" + strconv.FormatInt(at(h).UnixMilli(), 10)
	}
	exists := func(name string, h int) bool {
		_, err := q.Info(ctx, id(name, h))
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if err := q.loadCron(ctx, at(3).Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if next, err := q.fireCron(ctx, 1, at(4)); err != nil || !next.Equal(at(5)) {
		t.Fatalf("fireCron at 4: next %s, %v", next, err)
	}
	if next, err := q.fireCron(ctx, 1, at(6).Add(30*time.Minute)); err != nil || !next.Equal(at(7)) {
		t.Fatalf("fireCron at 6:30: next %s, %v; want 7:00 (the ended schedule left out)", next, err)
	}
	// A new leader: the count is read back from Redis.
	if err := q.loadCron(ctx, at(6).Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if next, err := q.fireCron(ctx, 2, at(12)); err != nil || !next.IsZero() {
		t.Fatalf("fireCron at 12: next %s, %v; want every schedule ended", next, err)
	}
	for _, h := range []int{4, 5, 6, 7, 8, 9, 10} {
		want := h >= 5 && h <= 7
		if got := exists("counted", h); got != want {
			t.Errorf("counted schedule, tick %d:00 enqueued %v, want %v", h, got, want)
		}
		want = h == 4 || h == 5 || h == 6
		if got := exists("ends", h); got != want {
			t.Errorf("schedule until 6:00, tick %d:00 enqueued %v, want %v", h, got, want)
		}
	}
	// Restarted later still, the counted schedule stays ended.
	if err := q.loadCron(ctx, at(20)); err != nil {
		t.Fatal(err)
	}
	if next, err := q.fireCron(ctx, 3, at(23)); err != nil || !next.IsZero() || exists("counted", 21) {
		t.Fatalf("after a restart: next %s, %v", next, err)
	}
}
