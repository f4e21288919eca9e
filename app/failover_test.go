package app_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// replicationLag bounds how long before a master's crash a write it
// acknowledged may still be missing on its replica (localhost, light load).
const replicationLag = 250 * time.Millisecond

// processedEvent is one event as a processor saw it.
type processedEvent struct {
	stream string
	key    string
	seq    int
	part   int
	worker string
	token  int64
	at     time.Time
}

// acked is one send that Send acknowledged.
type acked struct {
	key string
	seq int
	at  time.Time // when Send returned
}

// failoverLog records the sends and the processing of a failover test.
type failoverLog struct {
	mu      sync.Mutex
	sent    []acked
	done    []processedEvent
	fails   int                  // sends that returned an error
	lastErr map[string]string    // key -> last send error
	inSend  map[string]time.Time // key -> start of the send in progress
}

func (l *failoverLog) processor(worker, name string) func(ctx context.Context, events *stream.Events[event]) error {
	return func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			p := processedEvent{stream: name, key: e.Record.Key, seq: e.Record.Seq, part: e.Partition, worker: worker, token: events.Token(), at: time.Now()}
			l.mu.Lock()
			l.done = append(l.done, p)
			l.mu.Unlock()
		}
		return nil
	}
}

// unprocessed waits up to d for every record of sent to be processed and
// returns those that were not.
func (l *failoverLog) unprocessed(sent []acked, d time.Duration) []acked {
	missing := func() []acked {
		l.mu.Lock()
		defer l.mu.Unlock()
		got := map[string]bool{}
		for _, p := range l.done {
			got[fmt.Sprintf("%s/%d", p.key, p.seq)] = true
		}
		var out []acked
		for _, a := range sent {
			if !got[fmt.Sprintf("%s/%d", a.key, a.seq)] {
				out = append(out, a)
			}
		}
		return out
	}
	for wait := time.Now().Add(d); len(missing()) > 0 && time.Now().Before(wait); {
		time.Sleep(20 * time.Millisecond)
	}
	return missing()
}

// processed returns the events processed, in the order they were.
func (l *failoverLog) processed() []processedEvent {
	l.mu.Lock()
	done := slices.Clone(l.done)
	l.mu.Unlock()
	slices.SortStableFunc(done, func(a, b processedEvent) int { return a.at.Compare(b.at) })
	return done
}

// checkKeyOrder fails t when a key's records were processed out of order,
// redeliveries aside: after seq, the next new record processed is seq+1,
// unless gap(key, seq+1) says that record may be missing. It returns the
// number of redeliveries.
func checkKeyOrder(t *testing.T, done []processedEvent, gap func(key string, seq int) bool) (dups int) {
	t.Helper()
	last := map[string]int{}
	for _, p := range done {
		l, ok := last[p.key]
		switch {
		case ok && p.seq <= l:
			dups++ // a redelivery: at-least-once
		case ok && p.seq != l+1 && !gap(p.key, l+1):
			t.Errorf("key %s: %d processed right after %d", p.key, p.seq, l)
		}
		if !ok || p.seq > l {
			last[p.key] = p.seq
		}
	}
	return dups
}

// Acceptance for Redis Cluster failover: 3 masters with a replica each, a
// producer per key sending steadily, two workers. One master is killed
// (SIGKILL) under load; a replica takes over. Then: every record Send
// acknowledged is processed at least once and in order per key; no
// partition is processed by two owners at once; partitions on the other
// masters keep being processed (their longest gap is bounded); sends to the
// moved slots succeed again shortly after the promotion.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster failover test")
	}
	t.Parallel()
	cl := redistest.StartClusterReplicas(t, 3, 1)
	const partitions = 12
	opts := executor.Options{LockExpiry: 6 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second}
	log := &failoverLog{inSend: map[string]time.Time{}}
	newApp := func(worker string) (*app.App, *stream.Stream[event], *stream.Stream[event]) {
		a, err := app.New(app.Config{Name: "shop", Client: cl.Client(t), WorkerID: worker, Logger: testLogger(),
			Processing: opts, LeaderLease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(partitions))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Process(a, s, "p", log.processor(worker, "events")); err != nil {
			t.Fatal(err)
		}
		// A stream that never trims unprocessed entries sends through a
		// script: its sends are retried too.
		gs, err := stream.Declare[event](a, "guarded", stream.KeyField("key"), stream.Partitions(6), stream.WhenFull(stream.Wait))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Process(a, gs, "p", log.processor(worker, "guarded")); err != nil {
			t.Fatal(err)
		}
		return a, s, gs
	}
	_, s, gs := newApp("producer") // sends only; never runs
	a1, _, _ := newApp("w1")
	a2, _, _ := newApp("w2")
	w1, w2 := startWorker(t, a1), startWorker(t, a2)

	// Keys, their partitions and the masters serving them.
	keys := make([]string, 24)
	partOf := map[string]int{}
	masterOfPart := map[int]string{}
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
		p, err := s.Partition(event{Key: keys[i]})
		if err != nil {
			t.Fatal(err)
		}
		partOf[keys[i]] = p
	}
	for p := range partitions {
		masterOfPart[p] = cl.MasterOf(t, app.PartitionKey(s, p))
	}
	victim := masterOfPart[partOf[keys[0]]]
	keyMaster := map[string]string{} // key of either stream -> its master
	streamOf := map[string]*stream.Stream[event]{}
	for _, k := range keys {
		keyMaster[k], streamOf[k] = masterOfPart[partOf[k]], s
	}
	for i := range 6 {
		k := fmt.Sprintf("g%d", i)
		p, err := gs.Partition(event{Key: k})
		if err != nil {
			t.Fatal(err)
		}
		keyMaster[k], streamOf[k] = cl.MasterOf(t, app.PartitionKey(gs, p)), gs
	}
	var moved, kept []int // partitions with keys on the victim, on the others
	for p := range partitions {
		if !slices.Contains(slices.Collect(maps.Values(partOf)), p) {
			continue
		}
		if masterOfPart[p] == victim {
			moved = append(moved, p)
		} else {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		t.Fatalf("every partition on %s", victim)
	}

	// One producer per key, each sending its next record as soon as the
	// last one was acknowledged, with a pause of 5ms between records.
	ctx, stop := context.WithCancel(context.Background())
	var prod sync.WaitGroup
	t.Cleanup(func() { stop(); prod.Wait() }) // before the clients close, also after a Fatal
	for k, s := range streamOf {
		prod.Add(1)
		go func() {
			defer prod.Done()
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for seq := 0; ctx.Err() == nil; seq++ {
				sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				log.mu.Lock()
				log.inSend[k] = time.Now()
				log.mu.Unlock()
				_, err := s.Send(sctx, event{Key: k, Seq: seq})
				cancel()
				log.mu.Lock()
				delete(log.inSend, k)
				if err == nil {
					log.sent = append(log.sent, acked{key: k, seq: seq, at: time.Now()})
				} else if ctx.Err() == nil {
					log.fails++
					if log.lastErr == nil {
						log.lastErr = map[string]string{}
					}
					log.lastErr[k] = fmt.Sprintf("%d: %v", seq, err)
				}
				log.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	count := func() int {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.done)
	}
	redistest.Eventually(t, 20*time.Second, "processing under load", func() bool { return count() > 500 })
	// The kill comes once the workers share the partitions and no partition
	// changed owner for a second: a partition being handed over when its
	// lock's master dies, or whose new owner's acquisition fails after
	// writing the lock, waits for the lock to expire (LockExpiry).
	ownership := func() (workers, total int) {
		log.mu.Lock()
		defer log.mu.Unlock()
		seen, ws := map[string]bool{}, map[string]bool{}
		for _, p := range log.done {
			seen[fmt.Sprintf("%s/%d %s#%d", p.stream, p.part, p.worker, p.token)] = true
			ws[p.worker] = true
		}
		return len(ws), len(seen)
	}
	stable, lastN := time.Now(), -1
	redistest.Eventually(t, 20*time.Second, "a stable assignment", func() bool {
		w, n := ownership()
		if n != lastN {
			stable, lastN = time.Now(), n
		}
		return w == 2 && time.Since(stable) > time.Second
	})

	killedAt := cl.Kill(t, victim)
	fo := cl.WaitFailover(t, victim, 30*time.Second)
	promotion, promotedAt := fo.Took(), fo.Promoted
	// Load goes on until every key's sends succeed again, and a while after.
	recovered := func() []string { // keys without an acknowledged send since the promotion
		log.mu.Lock()
		defer log.mu.Unlock()
		after := map[string]bool{}
		for _, a := range log.sent {
			if a.at.After(promotedAt) {
				after[a.key] = true
			}
		}
		var out []string
		for k := range streamOf {
			if !after[k] {
				out = append(out, k)
			}
		}
		return out
	}
	for wait := time.Now().Add(30 * time.Second); len(recovered()) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(wait) {
			keys := recovered()
			log.mu.Lock()
			t.Fatalf("no acknowledged send since the promotion 30s ago to keys %v (last errors %v, sends in progress since %v)", keys, log.lastErr, log.inSend)
		}
	}
	settled := time.Now()
	redistest.Eventually(t, 10*time.Second, "load after the failover", func() bool { return time.Since(settled) > time.Second })
	stop()
	prod.Wait()

	// Every acknowledged record is processed, at least once.
	log.mu.Lock()
	sent := slices.Clone(log.sent)
	fails := log.fails
	log.mu.Unlock()
	want := map[string]bool{}
	for _, a := range sent {
		want[fmt.Sprintf("%s/%d", a.key, a.seq)] = true
	}
	// Redis replicates asynchronously: a write the killed master
	// acknowledged but had not yet passed to its replica is lost with it.
	// Such records can only be on its partitions, acknowledged just before
	// the kill; any other record not processed is a failure.
	var lost []acked
	for _, a := range log.unprocessed(sent, 30*time.Second) {
		if keyMaster[a.key] == victim && a.at.Before(killedAt) && killedAt.Sub(a.at) < replicationLag {
			lost = append(lost, a)
			continue
		}
		t.Errorf("record %s/%d (on %s, acknowledged %s after the kill) not processed",
			a.key, a.seq, keyMaster[a.key], a.at.Sub(killedAt))
	}
	for _, w := range []*worker{w1, w2} {
		if err := w.stop(t); err != nil {
			t.Fatal(err)
		}
	}
	done := log.processed()
	events := slices.DeleteFunc(slices.Clone(done), func(p processedEvent) bool { return p.stream != "events" })

	// Per key: in order, redeliveries aside.
	dups := checkKeyOrder(t, done, func(key string, seq int) bool { return !want[fmt.Sprintf("%s/%d", key, seq)] })

	// One owner at a time per partition: once another owner (worker and
	// fencing token) processed an event of a partition, an earlier owner
	// processes none of it any more, and each owner's token is higher than
	// the one before (a lock lost with the master included).
	owners := map[string][]string{} // stream/partition -> owners in turn
	tokens := map[string][]int64{}
	for _, p := range done {
		o := fmt.Sprintf("%s#%d", p.worker, p.token)
		part := fmt.Sprintf("%s/%d", p.stream, p.part)
		os := owners[part]
		if n := len(os); n > 0 && os[n-1] == o {
			continue
		}
		if slices.Contains(os, o) {
			t.Errorf("partition %s: owner %s processed again after %v took over", part, o, os[slices.Index(os, o)+1:])
		}
		if ts := tokens[part]; len(ts) > 0 && p.token <= ts[len(ts)-1] {
			t.Errorf("partition %s: owner %s after token %d", part, o, ts[len(ts)-1])
		}
		owners[part] = append(os, o)
		tokens[part] = append(tokens[part], p.token)
	}

	// The longest pause of partitions on the other masters, between the
	// kill and the end of the failover.
	var worstAt time.Time
	gap := func(parts []int, from, to time.Time) (time.Duration, int) {
		var worst time.Duration
		worstPart := -1
		for _, part := range parts {
			prev := from
			for _, p := range events {
				if p.part != part || p.at.Before(from) || p.at.After(to) {
					continue
				}
				if d := p.at.Sub(prev); d > worst {
					worst, worstPart, worstAt = d, part, prev
				}
				prev = p.at
			}
			if d := to.Sub(prev); d > worst {
				worst, worstPart = d, part
			}
		}
		return worst, worstPart
	}
	keptGap, keptPart := gap(kept, killedAt, settled)
	keptAt := worstAt
	movedGap, _ := gap(moved, killedAt, settled)

	// The longest wait, from acknowledgement to first processing, of a
	// record on the other masters acknowledged after the kill.
	ackAt := map[string]time.Time{}
	for _, a := range sent {
		ackAt[fmt.Sprintf("%s/%d", a.key, a.seq)] = a.at
	}
	var keptLatency time.Duration
	first := map[string]bool{}
	for _, p := range events {
		id := fmt.Sprintf("%s/%d", p.key, p.seq)
		if first[id] || masterOfPart[p.part] == victim {
			continue
		}
		first[id] = true
		if at, ok := ackAt[id]; ok && at.After(killedAt) && at.Before(settled) {
			keptLatency = max(keptLatency, p.at.Sub(at))
		}
	}

	// Sends: the first acknowledged send to a moved slot after the
	// promotion, and the longest pause of acknowledgements per key.
	firstMoved := time.Duration(-1)
	sendGap := map[bool]time.Duration{} // on the victim -> longest pause
	prevAck := map[string]time.Time{}
	for _, a := range sent {
		onVictim := keyMaster[a.key] == victim
		if onVictim && a.at.After(promotedAt) && (firstMoved < 0 || a.at.Sub(promotedAt) < firstMoved) {
			firstMoved = a.at.Sub(promotedAt)
		}
		if p, ok := prevAck[a.key]; ok && a.at.After(killedAt) {
			sendGap[onVictim] = max(sendGap[onVictim], a.at.Sub(p))
		}
		prevAck[a.key] = a.at
	}
	for _, a := range lost {
		t.Logf("record %s/%d acknowledged %s before the kill was lost with the master (not yet replicated)",
			a.key, a.seq, killedAt.Sub(a.at).Round(time.Microsecond))
	}
	t.Logf("partitions: %d on the killed master, %d on the others; %d records acknowledged, %d sends failed, %d processed (%d again)",
		len(moved), len(kept), len(sent), fails, len(done), dups)
	t.Logf("replica promoted %s after the kill; nodes said CLUSTERDOWN for %s", promotion.Round(time.Millisecond), fo.DownFor().Round(time.Millisecond))
	t.Logf("first acknowledged send to a moved slot %s after the promotion", firstMoved.Round(time.Millisecond))
	t.Logf("longest pause of acknowledgements: %s on the killed master's keys, %s on the others",
		sendGap[true].Round(time.Millisecond), sendGap[false].Round(time.Millisecond))
	t.Logf("longest processing pause: %s on the other masters (partition %d, from %s after the kill), %s on the killed master's partitions",
		keptGap.Round(time.Millisecond), keptPart, keptAt.Sub(killedAt).Round(time.Millisecond), movedGap.Round(time.Millisecond))
	t.Logf("longest wait from acknowledgement to processing on the other masters: %s", keptLatency.Round(time.Millisecond))
	for p, os := range owners {
		if len(os) > 1 {
			t.Logf("partition %s owners in turn: %v", p, os)
		}
	}

	// Partitions on the other masters pause only while Redis refuses
	// everything (CLUSTERDOWN, from the failure detection to the
	// promotion) or while nothing is sent to them, plus a read.
	const slack = time.Second
	if limit := fo.DownFor() + opts.ReadBlock + slack; keptLatency > limit {
		t.Errorf("a record on a surviving master waited %s to be processed, want at most %s (CLUSTERDOWN %s + read block %s + %s)",
			keptLatency, limit, fo.DownFor(), opts.ReadBlock, slack)
	}
	if limit := sendGap[false] + opts.ReadBlock + slack; keptGap > limit {
		t.Errorf("a partition on a surviving master paused %s, want at most %s (pause of its sends %s + read block %s + %s)",
			keptGap, limit, sendGap[false], opts.ReadBlock, slack)
	}
	if fails > 0 {
		t.Errorf("%d sends failed during the failover", fails)
	}
	if firstMoved < 0 || firstMoved > 2*time.Second {
		t.Errorf("first send to a moved slot %s after the promotion, want within 2s", firstMoved)
	}
}
