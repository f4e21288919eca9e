package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/leatdev/leat/middleware"
)

func TestLogging(t *testing.T) {
	m := &middleware.Message{Stream: "orders", Processor: "totals", Partition: 3,
		Entries: []middleware.Entry{{ID: "1-0", Deliveries: 2}}}
	for _, tc := range []struct {
		level slog.Level
		err   error
		want  []string // lines, each with these fragments
	}{
		{slog.LevelInfo, nil, nil},
		{slog.LevelDebug, nil, []string{"level=DEBUG msg=\"event handled\" stream=orders processor=totals partition=3 id=1-0 deliveries=2 duration="}},
		{slog.LevelInfo, errors.New("db down"), []string{"level=ERROR msg=\"event failed\" stream=orders processor=totals partition=3 id=1-0 deliveries=2 duration=", "error=\"db down\""}},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level}))
		h := middleware.Chain(func(context.Context, *middleware.Message) error { return tc.err }, middleware.Logging(log))
		if err := h(context.Background(), m); !errors.Is(err, tc.err) {
			t.Fatalf("error %v, want %v", err, tc.err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(tc.want) == 0 {
			if buf.Len() != 0 {
				t.Fatalf("logged %q", buf.String())
			}
			continue
		}
		if len(lines) != 1 {
			t.Fatalf("want one record, got %q", buf.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("record %q lacks %q", lines[0], w)
			}
		}
	}
	// A failed batch: one record per event.
	var buf bytes.Buffer
	batch := &middleware.Message{Stream: "orders", Processor: "totals", Batch: true,
		Entries: []middleware.Entry{{ID: "1-0"}, {ID: "1-1"}}}
	h := middleware.Chain(func(context.Context, *middleware.Message) error { return errors.New("x") },
		middleware.Logging(slog.New(slog.NewTextHandler(&buf, nil))))
	_ = h(context.Background(), batch)
	if n := strings.Count(buf.String(), "event failed"); n != 2 || !strings.Contains(buf.String(), "id=1-1") || !strings.Contains(buf.String(), "batch=2") {
		t.Fatalf("batch records %q", buf.String())
	}
}
