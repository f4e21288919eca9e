package app_test

import (
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/stream"
)

// On Redis Cluster the partitions of a stream spread over the masters; the
// runtime reads them with its fenced script and polls idle partitions.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	r := newRecorder()
	var s *stream.Stream[event]
	newWorker := func() *worker {
		c := cl.Client(t)
		a, err := app.New(app.Config{Name: "shop", Client: c, Logger: testLogger(), Processing: fastOptions(), LeaderLease: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s, err = stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(8))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Process(a, s, "p", collect(r)); err != nil {
			t.Fatal(err)
		}
		return startWorker(t, a)
	}
	w1 := newWorker()
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	sent := sendEvents(t, s, keys, 10, 0)
	w2 := newWorker()
	redistest.Eventually(t, 20*time.Second, "the first events", func() bool { return r.count() == len(sent) })
	sent = append(sent, sendEvents(t, s, keys, 10, 100)...)
	redistest.Eventually(t, 20*time.Second, "events sent with two workers", func() bool { return r.count() == len(sent) })
	if err := w2.stop(t); err != nil {
		t.Fatal(err)
	}
	sent = append(sent, sendEvents(t, s, keys, 10, 200)...)
	redistest.Eventually(t, 20*time.Second, "events after a leave", func() bool { return r.count() == len(sent) })
	if err := w1.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, sent)
	r.inOrder(t, false)

	// The partitions live on more than one master.
	c := cl.Client(t)
	nodes := map[string]bool{}
	for p := range 8 {
		slot := c.ClusterKeySlot(t.Context(), app.PartitionKey(s, p)).Val()
		for _, sl := range c.ClusterSlots(t.Context()).Val() {
			if slot >= int64(sl.Start) && slot <= int64(sl.End) {
				nodes[sl.Nodes[0].Addr] = true
			}
		}
	}
	if len(nodes) < 2 {
		t.Fatalf("8 partitions on %d master(s), want them spread", len(nodes))
	}
}
