package runner

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// The executor's own connections speak RESP2 whatever the application's
// client speaks (topology.Own): on RESP3, go-redis peeks at the fetcher's
// connection, held out of its pool, before every command. Only the
// application client's connections speak RESP3.
func TestOwnConnectionsSpeakRESP2(t *testing.T) {
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 3})
	t.Cleanup(func() { c.Close() })
	r := rigOn(t, c, "idle", 4, 1000)
	e := r.executor("p", executor.Options{ReadBlock: 4 * time.Second}, drainAll)
	r.run(e)
	redistest.Eventually(t, 30*time.Second, "all partitions owned", func() bool { return len(e.Owned()) == 4 })
	var blockID int64
	redistest.Eventually(t, 30*time.Second, "the fetcher blocking on every partition", func() bool {
		e.fetch.mu.Lock()
		blocking, id := e.fetch.blocking, e.fetch.blockID
		e.fetch.mu.Unlock()
		blockID = id
		return e.fetch.idle() == 4 && blocking && id != 0
	})
	list, err := c.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	resp := map[string]int{}
	fetcher := ""
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		var id, proto string
		for _, f := range fields {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(f, "resp="); ok {
				proto = v
			}
		}
		if proto == "" {
			t.Skipf("the server does not report client protocols (Redis < 7): %q", sc.Text())
		}
		resp[proto]++
		if id == strconv.FormatInt(blockID, 10) {
			fetcher = proto
		}
	}
	if fetcher != "2" {
		t.Errorf("the fetcher's connection (id %d) speaks RESP%q, want RESP2:\n%s", blockID, fetcher, list)
	}
	if app := c.PoolStats().TotalConns; resp["3"] > int(app) {
		t.Errorf("%d connections speak RESP3, the application client has %d: the executor's own should speak RESP2:\n%s", resp["3"], app, list)
	}
	if resp["2"] < 2 {
		t.Errorf("%d connections speak RESP2, want at least the fetcher's and a lock client's:\n%s", resp["2"], list)
	}
}
