package task_test

import (
	"bufio"
	"context"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/task"
)

// An idle queue costs each of its workers a blocking read per read block
// (500ms), and no fetch script beside it: after a blocking read that found
// nothing, the next one goes out at once (an entry added meanwhile is
// returned by it at once), and tasks enqueued then still run.
func TestIdleQueueCost(t *testing.T) {
	e := newEnv(t)
	a := e.app("w1")
	q, err := task.Handle(a, "idle", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	ctx := ctxT(t)
	id, err := q.Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // idle: the fetchers' first blocking reads found nothing

	var mu sync.Mutex
	reads, fetches := 0, 0 // blocking reads, and fetch scripts taking ready tasks
	stop := monitor(t, func(line string) {
		if !strings.Contains(line, e.prefix+":") || strings.Contains(line, " lua]") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(line, `"xreadgroup"`) && strings.Contains(line, `"block"`):
			reads++
		case strings.Contains(line, `"evalsha"`) && strings.Contains(line, `"read"`):
			fetches++
		}
	})
	time.Sleep(2500 * time.Millisecond)
	stop()
	mu.Lock()
	r, f := reads, fetches
	mu.Unlock()
	if r < 3 || f > 0 {
		t.Errorf("idle for 2.5s: %d blocking reads and %d fetch scripts, want blocking reads (500ms each) and no script", r, f)
	}
	t.Logf("idle for 2.5s: %d blocking reads, %d fetch scripts", r, f)

	id, err = q.Enqueue(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := q.Result(ctx, id); err != nil || res != 2 {
		t.Fatalf("a task enqueued while idle: %v %v", res, err)
	}
}

// monitor sends each command the shared server runs to fn (MONITOR) until
// the returned stop is called.
func monitor(t *testing.T, fn func(line string)) (stop func()) {
	t.Helper()
	u, err := url.Parse(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(conn)
	if l, err := rd.ReadString('\n'); err != nil || l != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", l, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			fn(line)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { conn.Close(); <-done }) }
	t.Cleanup(stop)
	return stop
}
