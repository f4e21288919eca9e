package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// An App built from a rediss:// URL and Config.TLS processes events on a
// TLS-only server, with and without a client certificate.
func TestTLSConfig(t *testing.T) {
	t.Parallel()
	for _, mutual := range []bool{false, true} {
		srv := redistest.StartTLS(t, mutual)
		tc := app.TLSConfig{CAFile: srv.Files.CA}
		if mutual {
			tc.CertFile, tc.KeyFile = srv.Files.ClientCert, srv.Files.ClientKey
		}
		a, err := app.New(app.Config{Name: "shop", RedisURL: srv.URL, TLS: tc, Logger: testLogger(),
			Processing: fastOptions(), LeaderLease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(2))
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder()
		if err := app.Process(a, s, "rec", func(ctx context.Context, events *stream.Events[event]) error {
			for e := range events.All() {
				rec.add(e)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		w := startWorker(t, a)
		sent := sendEvents(t, s, []string{"a", "b", "c"}, 5, 0)
		redistest.Eventually(t, 10*time.Second, "15 events processed", func() bool { return rec.count() == len(sent) })
		if err := w.stop(t); err != nil {
			t.Fatalf("mutual %v: %v", mutual, err)
		}
		a.Close()
	}
}

// The server's certificate is verified: an App trusting another CA cannot
// connect, and says so.
func TestTLSConfigVerifies(t *testing.T) {
	t.Parallel()
	srv := redistest.StartTLS(t, false)
	other := redistest.GenerateTLS(t)
	a, err := app.New(app.Config{Name: "shop", RedisURL: srv.URL, TLS: app.TLSConfig{CAFile: other.CA}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Ping(ctx); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("ping with another CA: %v", err)
	}
}

// Unusable TLS settings fail New with ErrTLSConfig naming the file.
func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	files := redistest.GenerateTLS(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		tls  app.TLSConfig
		want string
	}{
		{"rediss://127.0.0.1:1", app.TLSConfig{CAFile: missing}, missing},
		{"rediss://127.0.0.1:1", app.TLSConfig{CAFile: garbage}, garbage},
		{"rediss://127.0.0.1:1", app.TLSConfig{CertFile: files.ClientCert}, files.ClientCert},
		{"rediss://127.0.0.1:1", app.TLSConfig{CertFile: files.ClientCert, KeyFile: files.ServerKey}, files.ServerKey},
		{"redis://127.0.0.1:1", app.TLSConfig{CAFile: files.CA}, "rediss://"},
	} {
		_, err := app.New(app.Config{Name: "shop", RedisURL: tc.url, TLS: tc.tls})
		if !errors.Is(err, app.ErrTLSConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrTLSConfig naming %s", tc.tls, err, tc.want)
		}
	}
}
