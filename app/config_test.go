package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

func TestConfigDefaults(t *testing.T) {
	a, err := app.New(app.Config{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cfg := a.Config()
	if cfg.RedisURL != app.DefaultRedisURL || cfg.KeyPrefix != "leat" || cfg.Partitions != 16 ||
		cfg.PartitionSize != 50_000 || cfg.Codec != stream.MsgPack || cfg.SendBatch != 1000 || cfg.Logger == nil {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	s, err := stream.Declare[map[string]any](a, "s", stream.KeyField("k"))
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Definition(); d.Partitions != 16 || d.Size != 50_000 || d.Codec != "msgpack" {
		t.Fatalf("stream did not take the app defaults: %+v", d)
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		cfg  app.Config
		want []string
	}{
		{app.Config{}, []string{"app name is empty"}},
		{app.Config{Name: "a b"}, []string{`app name "a b" is invalid`}},
		{app.Config{Name: "a", KeyPrefix: "x{y}"}, []string{"key prefix"}},
		{app.Config{Name: "a", Partitions: -1, PartitionSize: -5, SendBatch: -2}, []string{"partitions -1", "partition size -5", "send batch -2"}},
		{app.Config{Name: "a", RedisURL: "http://x"}, []string{"redis URL"}},
	}
	for _, tc := range cases {
		a, err := app.New(tc.cfg)
		if err == nil {
			a.Close()
			t.Fatalf("New(%+v) succeeded", tc.cfg)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%+v) = %q, want it to mention %q", tc.cfg, err, w)
			}
		}
	}
}

func TestCallerOwnedClient(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The App did not close a client it did not create.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("caller's client closed by App.Close: %v", err)
	}
}
