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

// TestCronSkipsTickOfFullKey: a cron tick refused because its key's line
// is full (MaxKeyBacklog) is skipped: the schedule goes on to its next
// tick instead of trying that one again at every wake.
func TestCronSkipsTickOfFullKey(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Handle(a, "hourly", func(ctx context.Context, tk *Task[int]) (int, error) { return tk.Payload, nil },
		Keyed(), MaxKeyBacklog(1))
	if err != nil {
		t.Fatal(err)
	}
	at := func(h int) time.Time { return time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC) }
	if err := q.Cron("tick", "0 * * * *", 1, Key("k")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exists := func(h int) bool {
		_, err := q.Info(ctx, ReservedIDPrefix+"tick:"+strconv.FormatInt(at(h).UnixMilli(), 10))
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if err := q.loadCron(ctx, at(3).Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if next, err := q.fireCron(ctx, 1, at(4)); err != nil || !next.Equal(at(5)) || !exists(4) {
		t.Fatalf("fireCron at 4: next %s, %v, tick 4 created %v", next, err, exists(4))
	}
	// no worker ran tick 4: the key's line is full
	if next, err := q.fireCron(ctx, 1, at(5)); err != nil || !next.Equal(at(6)) || exists(5) {
		t.Fatalf("fireCron at 5: next %s, %v, tick 5 created %v; want it skipped and 6:00 next", next, err, exists(5))
	}
}
