package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// commands is a go-redis hook that counts a client's commands by name, and
// the most XREADs it had in flight at once.
type commands struct {
	mu       sync.Mutex
	n        map[string]int
	xreads   int // in flight
	maxXread int
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		name := cmd.Name()
		c.mu.Lock()
		c.n[name]++
		if name == "xread" {
			c.xreads++
			c.maxXread = max(c.maxXread, c.xreads)
		}
		c.mu.Unlock()
		err := next(ctx, cmd)
		if name == "xread" {
			c.mu.Lock()
			c.xreads--
			c.mu.Unlock()
		}
		return err
	}
}

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *commands) get() (n map[string]int, inFlight, maxInFlight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = make(map[string]int, len(c.n))
	for k, v := range c.n {
		n[k] = v
	}
	return n, c.xreads, c.maxXread
}

// follower reads a task's events on a goroutine of its own: each event's
// text, as it comes, until the stream ends.
type follower struct {
	mu     sync.Mutex
	events []string
	status int
	err    error
	ended  chan struct{}
}

func follow(ctx context.Context, c *http.Client, url string) *follower {
	f := &follower{ended: make(chan struct{})}
	go func() {
		defer close(f.ended)
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		res, err := c.Do(req)
		if err != nil {
			f.mu.Lock()
			f.err = err
			f.mu.Unlock()
			return
		}
		defer res.Body.Close()
		f.mu.Lock()
		f.status = res.StatusCode
		f.mu.Unlock()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 4<<20)
		var ev []string
		for sc.Scan() {
			if sc.Text() != "" {
				ev = append(ev, sc.Text())
				continue
			}
			f.mu.Lock()
			f.events = append(f.events, strings.Join(ev, "\n"))
			f.mu.Unlock()
			ev = nil
		}
	}()
	return f
}

func (f *follower) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

// Followers of one task share one reader of its updates: 50 of them cost
// Redis one blocking read at a time, as one does, and each receives the
// same events in the same order, late ones from the start.
func TestFollowersShareOneReader(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	hc := redis.NewClient(opt)
	t.Cleanup(func() { hc.Close() })
	count := &commands{n: map[string]int{}}
	hc.AddHook(count)
	srv := httptest.NewServer(api.NewHandler(newApp(t, hc, e.prefix), api.Options{}))
	t.Cleanup(srv.Close)

	id := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"parts"}}`).want(t, 200, "").body["id"].(string)
	url := srv.URL + "/v1/queues/work/tasks/" + id + "/events"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 50
	fs := []*follower{follow(ctx, srv.Client(), url)}
	// The first partials arrive while the handler waits at its gate; the
	// others join then, and read from the start.
	redistest.Eventually(t, 10*time.Second, "the first follower's first events", func() bool { return len(fs[0].got()) >= 3 })
	for range n - 1 {
		fs = append(fs, follow(ctx, srv.Client(), url))
	}
	redistest.Eventually(t, 20*time.Second, "every follower's first events", func() bool {
		for _, f := range fs {
			if len(f.got()) < 3 {
				return false
			}
		}
		return true
	})
	close(e.gate)
	for i, f := range fs {
		select {
		case <-f.ended:
		case <-time.After(20 * time.Second):
			t.Fatalf("follower %d: events did not end: %q", i, f.got())
		}
	}
	want := fs[0].got()
	var kinds []string
	for _, ev := range want {
		kinds = append(kinds, strings.SplitN(strings.SplitN(ev, "event: ", 2)[1], "\n", 2)[0])
	}
	if strings.Join(kinds, ",") != "progress,partial,partial,partial,progress,done" ||
		!strings.Contains(want[1], `"one"`) || !strings.Contains(want[3], `"three"`) || !strings.Contains(want[5], `"state":"succeeded"`) {
		t.Fatalf("events: %q", want)
	}
	for i, f := range fs {
		if f.err != nil || f.status != 200 {
			t.Fatalf("follower %d: %d %v", i, f.status, f.err)
		}
		if got := f.got(); strings.Join(got, "\n\n") != strings.Join(want, "\n\n") {
			t.Errorf("follower %d got %q, want %q", i, got, want)
		}
	}
	cmds, inFlight, most := count.get()
	if most != 1 {
		t.Errorf("%d XREADs in flight at once for %d followers of one task, want 1", most, n)
	}
	// The task is read once to check it exists and once at its end, then
	// only its state between reads.
	if cmds["hgetall"] > 2 {
		t.Errorf("%d HGETALLs of the task for %d followers (commands %v)", cmds["hgetall"], n, cmds)
	}
	if inFlight != 0 {
		t.Errorf("%d XREADs in flight once every follower left", inFlight)
	}
}

// Followers are capped: one more is answered 503 too_many_followers with a
// Retry-After, and a follower that leaves frees its place.
func TestFollowersCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{MaxFollowers: 2})
	id := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"block"}}`).want(t, 200, "").body["id"].(string)
	url := e.srv.URL + "/v1/tasks/" + id + "/events"
	open := func(ctx context.Context) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ctx1, leave1 := context.WithCancel(context.Background())
	defer leave1()
	ctx2, leave2 := context.WithCancel(context.Background())
	defer leave2()
	for _, ctx := range []context.Context{ctx1, ctx2} {
		res := open(ctx)
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("follower: %d", res.StatusCode)
		}
	}
	res := open(context.Background())
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third follower: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	e.do(t, "GET", "/v1/tasks/"+id+"/events", "").want(t, http.StatusServiceUnavailable, "too_many_followers")
	// Other requests are served meanwhile.
	e.do(t, "GET", "/v1/tasks/"+id, "").want(t, 200, "")

	leave1()
	ctx3, leave3 := context.WithCancel(context.Background())
	defer leave3()
	redistest.Eventually(t, 10*time.Second, "a place freed by the follower that left", func() bool {
		res := open(ctx3)
		defer res.Body.Close()
		return res.StatusCode == 200
	})
	e.do(t, "POST", "/v1/tasks/"+id+"/cancel", "").want(t, 200, "")
}

// A follower that reads nothing holds back neither the task's reader nor
// its other followers; once it falls out of the events kept, it gets an
// error event and is disconnected.
func TestSlowFollowerFallsBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	ctx := context.Background()
	id := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"block"}}`).want(t, 200, "").body["id"].(string)
	redistest.Eventually(t, 10*time.Second, "task running", func() bool {
		return e.do(t, "GET", "/v1/tasks/"+id, "").body["state"] == "active"
	})
	url := e.srv.URL + "/v1/queues/work/tasks/" + id + "/events"
	// The updates a handler would report, written as the worker writes
	// them: more than the connection of a client that reads nothing holds,
	// then more events than are kept.
	updates := rdb.NewKeySpace(e.prefix, "shop").TaskUpdatesPrefix("work") + id
	partials := func(n, size int) {
		t.Helper()
		pipe := e.client.Pipeline()
		for range n {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: updates, Values: []any{"k", "partial", "d", `"` + strings.Repeat("x", size) + `"`, "a", "1"}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}

	sctx, leave := context.WithCancel(ctx)
	defer leave()
	req, _ := http.NewRequestWithContext(sctx, "GET", url, nil)
	slow, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Body.Close()
	fast := follow(ctx, e.srv.Client(), url)
	want := 0
	received := func() bool { return len(fast.got()) == want }
	partials(20, 1<<20)
	want += 20
	redistest.Eventually(t, 20*time.Second, "the big events at the follower that reads", received)
	for range 6 {
		partials(200, 10)
		want += 200
		redistest.Eventually(t, 20*time.Second, fmt.Sprintf("%d events at the follower that reads", want), received)
	}
	e.do(t, "POST", "/v1/tasks/"+id+"/cancel", "").want(t, 200, "")
	select {
	case <-fast.ended:
	case <-time.After(20 * time.Second):
		t.Fatalf("the follower that reads did not get to the end: %d events", len(fast.got()))
	}
	got := fast.got()
	if len(got) != want+1 || !strings.Contains(got[want], "event: done") || !strings.Contains(got[want], `"state":"cancelled"`) {
		t.Fatalf("the follower that reads got %d events, the last %.200q", len(got), got[len(got)-1])
	}
	// The slow one reads at last: what its connection held, then the error.
	b, err := io.ReadAll(slow.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "\n\n") || !strings.Contains(string(b[max(0, len(b)-500):]), `event: error`) ||
		!strings.Contains(string(b[max(0, len(b)-500):]), `"code":"follower_behind"`) || strings.Contains(string(b), "event: done") {
		t.Fatalf("the slow follower read %d bytes ending %q", len(b), b[max(0, len(b)-300):])
	}
}
