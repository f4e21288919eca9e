package task

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// On 1 November 2026 New York goes from 02:00 EDT back to 01:00 EST: a
// schedule at 01:30 enqueues one tick that day (01:30 EDT), as the app's
// background schedules run once, not one per 01:30 the clocks show.
func TestCronRepeatedHourOnce(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Handle(a, "nightly", func(ctx context.Context, tk *Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Cron("report", "CRON_TZ=America/New_York 30 1 * * *", 1); err != nil {
		t.Fatal(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := q.loadCron(ctx, time.Date(2026, 11, 1, 0, 0, 0, 0, ny)); err != nil {
		t.Fatal(err)
	}
	next, err := q.fireCron(ctx, 1, time.Date(2026, 11, 1, 3, 0, 0, 0, ny))
	if err != nil {
		t.Fatal(err)
	}
	edt := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC) // 01:30 EDT
	est := time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC) // 01:30 EST, an hour later
	id := func(tick time.Time) string {
		return ReservedIDPrefix + "report:" + strconv.FormatInt(tick.UnixMilli(), 10)
	}
	if _, err := q.Info(ctx, id(edt)); err != nil {
		t.Errorf("01:30 EDT: %v", err)
	}
	if _, err := q.Info(ctx, id(est)); !errors.Is(err, ErrNotFound) {
		t.Errorf("01:30 EST enqueued as well: %v", err)
	}
	if want := time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next tick %s, want %s", next.UTC(), want)
	}
}
