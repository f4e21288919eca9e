package topology_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// After a master's failover, a pipeline to one of its slots works again
// soon on a client with the hook, when go-redis alone keeps sending to the
// dead address until it reloads its slot map for another reason.
func TestReloadAfterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartClusterReplicas(t, 3, 1)
	hooked, plain := cl.Client(t), cl.Client(t)
	topology.Attach(hooked)
	topology.Attach(hooked) // once is enough; twice adds nothing
	ctx := context.Background()
	const key = "k"
	set := func(c *redis.ClusterClient) error {
		pipe := c.Pipeline()
		pipe.Set(ctx, key, "v", 0)
		_, err := pipe.Exec(ctx)
		return err
	}
	for _, c := range []*redis.ClusterClient{hooked, plain} {
		if err := set(c); err != nil { // both know the slot map
			t.Fatal(err)
		}
	}
	victim := cl.MasterOf(t, key)
	// Both clients send every 20ms from the kill, as a producer would, until
	// 5s after the promotion (or until they recovered).
	type result struct {
		last time.Time // the last failure
		ok   time.Time // the first success after it
	}
	var wg sync.WaitGroup
	results := make([]result, 2)
	// One channel each: a shared one could give both ends to one goroutine
	// and leave the other sending for ever.
	ends := []chan time.Time{make(chan time.Time, 1), make(chan time.Time, 1)}
	cl.Kill(t, victim)
	for i, c := range []*redis.ClusterClient{hooked, plain} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var until time.Time
			for {
				select {
				case until = <-ends[i]:
				default:
				}
				if !until.IsZero() && (time.Now().After(until) || !results[i].ok.IsZero()) {
					return
				}
				if err := set(c); err != nil {
					results[i] = result{last: time.Now()}
				} else if !results[i].last.IsZero() && results[i].ok.IsZero() {
					results[i].ok = time.Now()
					if !until.IsZero() {
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	fo := cl.WaitFailover(t, victim, 30*time.Second)
	for _, end := range ends {
		end <- fo.Promoted.Add(5 * time.Second)
	}
	wg.Wait()
	after := func(r result) string {
		if r.ok.IsZero() {
			return "not within 5s"
		}
		return r.ok.Sub(fo.Promoted).Round(time.Millisecond).String()
	}
	t.Logf("promoted %s after the kill; pipelines work again %s after it with the hook, %s without",
		fo.Took().Round(time.Millisecond), after(results[0]), after(results[1]))
	if r := results[0]; r.ok.IsZero() || r.ok.Sub(fo.Promoted) > 2*time.Second {
		t.Errorf("with the hook, pipelines worked again %s after the promotion, want within 2s", after(r))
	}
}
