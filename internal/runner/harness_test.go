package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// rig is one test's Redis client, key space and stream.
type rig struct {
	t      *testing.T
	client *redis.Client
	keys   rdb.KeySpace
	st     *core.Core
}

// newRig returns a rig with a stream "s" of the given partitions, each
// keeping about size entries.
func newRig(t *testing.T, partitions, size int) *rig {
	t.Helper()
	c, prefix := redistest.Client(t)
	return rigOn(t, c, prefix, partitions, size)
}

// rigOn returns a rig of client c (a cluster client too: the rig's client
// is then nil) under key prefix, with a stream "s" of the given partitions,
// each keeping about size entries.
func rigOn(t *testing.T, c redis.UniversalClient, prefix string, partitions, size int) *rig {
	t.Helper()
	ks := rdb.NewKeySpace(prefix, "app")
	st, err := core.Open(core.NewCatalog(c, ks, core.Defaults{}, nil),
		core.Definition{Name: "s", Partitions: partitions, KeyField: "k", Size: int64(size), Codec: "msgpack"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, keys: ks, st: st}
	r.client, _ = c.(*redis.Client)
	return r
}

func rigLogger() *slog.Logger {
	if os.Getenv("LEAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// send appends n entries to partition p (trimmed to the stream's size).
func (r *rig) send(p, n int) {
	r.t.Helper()
	entries := make([]core.Entry, n)
	for i := range entries {
		entries[i] = core.Entry{Partition: p, Key: []byte("k"), Codec: "msgpack", Data: []byte(fmt.Sprint(i))}
	}
	if _, err := r.st.SendEntries(context.Background(), entries); err != nil {
		r.t.Fatal(err)
	}
}

// executor returns an executor of processor name over the rig's stream.
func (r *rig) executor(name string, opts executor.Options, h Handler) *Executor {
	r.t.Helper()
	if opts.LockExpiry == 0 {
		opts.LockExpiry = 900 * time.Millisecond
	}
	if opts.ReadBlock == 0 {
		opts.ReadBlock = 100 * time.Millisecond
	}
	if opts.Grace == 0 {
		opts.Grace = 500 * time.Millisecond
	}
	e, err := New(Config{Stream: r.st, Processor: name, Handler: h, Options: opts, Logger: rigLogger()})
	if err != nil {
		r.t.Fatal(err)
	}
	return e
}

// run runs e until the returned function stops it and returns Run's error;
// the test's end stops it too.
func (r *rig) run(e *Executor) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				r.t.Errorf("executor did not stop within 30s")
			}
		}
		return err
	}
	r.t.Cleanup(func() { stop() })
	return stop
}

// owns waits until e holds exactly the partitions ps.
func owns(t *testing.T, e *Executor, ps ...int) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, fmt.Sprintf("executor owning %v", ps), func() bool {
		return fmt.Sprint(e.Owned()) == fmt.Sprint(ps)
	})
}
