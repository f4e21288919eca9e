package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/rounds"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// Core is the untyped part of a stream: its definition, routing, codec and the
// batched sending of raw entries. Typed streams and the CLI are built on it.
type Core struct {
	def        Definition
	codec      Codec
	catalog    *Catalog
	recordType string // Go type of records, for conflict messages
	keyKind    string // kind of its partition keys (keykind.go)
	fromJSON   func([]byte) (Entry, error)
	typed      any // the *Typed[T] of the declaration
	schema     schemaState

	regMu      sync.Mutex
	registered bool
	entryCodec atomic.Pointer[string] // the registry's EntryCodec, once registered

	keysOnce sync.Once
	partKeys []string // PartitionKey of every partition
	keyArgs  []any    // the same, boxed once as command arguments (keyArg)

	joined rounds.Group[[]Entry] // sends sharing round trips (join.go)

	tablesMu sync.Mutex
	tables   tables // declared tables by processor (table.go)
}

// Definition returns the stream's definition, with its entry codec once
// registered.
func (c *Core) Definition() Definition {
	d := c.def
	d.EntryCodec = c.EntryCodec()
	return d
}

// Name returns the stream's name.
func (c *Core) Name() string { return c.def.Name }

// Partitions returns the stream's partition count.
func (c *Core) Partitions() int { return c.def.Partitions }

// Codec returns the codec records are encoded with.
func (c *Core) Codec() Codec { return c.codec }

// Catalog returns the catalog the stream is declared in.
func (c *Core) Catalog() *Catalog { return c.catalog }

// PartitionKey returns the Redis key of partition p.
func (c *Core) PartitionKey(p int) string {
	c.partitionKeys()
	if p < 0 || p >= len(c.partKeys) {
		return c.catalog.keys.Partition(c.def.Name, p)
	}
	return c.partKeys[p]
}

// keyArg returns PartitionKey(p) as a command argument, boxed once per
// partition rather than at every XADD.
func (c *Core) keyArg(p int) any {
	c.partitionKeys()
	if p < 0 || p >= len(c.keyArgs) {
		return c.PartitionKey(p)
	}
	return c.keyArgs[p]
}

func (c *Core) partitionKeys() {
	c.keysOnce.Do(func() {
		c.partKeys = make([]string, c.def.Partitions)
		c.keyArgs = make([]any, c.def.Partitions)
		for i := range c.partKeys {
			c.partKeys[i] = c.catalog.keys.Partition(c.def.Name, i)
			c.keyArgs[i] = c.partKeys[i]
		}
	})
}

// PartitionOf returns the partition of key bytes.
func (c *Core) PartitionOf(key []byte) int { return PartitionOf(key, c.def.Partitions) }

// Register writes the stream's definition to the registry in Redis (once per
// process; later calls return at once).
func (c *Core) Register(ctx context.Context) error {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if c.registered {
		return nil
	}
	ec, err := register(ctx, c.catalog.client, c.catalog.keys.Registry(), c.def)
	if err != nil {
		return err
	}
	if err := c.writeSchema(ctx); err != nil {
		return err
	}
	c.entryCodec.Store(&ec)
	c.registered = true
	return nil
}

// EntryCodec returns the codec name of the stream's entries that carry no
// codec field (Definition.EntryCodec), or "" before Register, or when the
// registry keeps a definition without one (entries then all carry their
// codec).
func (c *Core) EntryCodec() string {
	if ec := c.entryCodec.Load(); ec != nil {
		return *ec
	}
	return ""
}

// Decoder returns the codec for entries whose codec field says name.
func (c *Core) Decoder(name string) (Codec, error) {
	if name == c.codec.Name() {
		return c.codec, nil
	}
	return LookupCodec(name, c.codec)
}

// sendLanes is how many pipelines a large send keeps in flight at once, on
// as many connections: Redis works on one while the next is written and the
// replies of another are read. Entries are dealt to lanes by partition, so
// the entries of one partition stay in one lane, in order.
const sendLanes = 4

// SendEntries sends entries, already encoded and keyed, to their partitions
// (Entry.Partition) with pipelined XADDs, SendBatch per round trip, and
// returns their IDs in the same order. Entries of one partition are appended
// in slice order. When it fails part way, the returned slice still has one
// element per entry: the ID of each entry that was sent, "" for the others.
// A few entries share round trips with concurrent sends (join.go).
func (c *Core) SendEntries(ctx context.Context, entries []Entry) ([]string, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	for i := range entries {
		if p := entries[i].Partition; p < 0 || p >= c.def.Partitions {
			return nil, fmt.Errorf("stream %q: entry %d: partition %d out of range", c.def.Name, i, p)
		}
	}
	if err := c.Register(ctx); err != nil {
		return nil, err
	}
	if c.def.WhenFull == FullTrim && len(entries) <= joinMax {
		return c.joinSend(ctx, entries) // shares round trips with concurrent sends (join.go)
	}
	ids := make([]string, len(entries))
	if c.def.WhenFull != FullTrim {
		return ids, c.sendGuarded(ctx, entries, ids)
	}
	batch := c.catalog.defaults.SendBatch
	_, cluster := c.catalog.client.(*redis.ClusterClient) // its pipelines fan out by node already
	if len(entries) <= batch || cluster {
		return ids, c.sendLane(ctx, entries, nil, ids, nil)
	}
	lanes := make([][]int, sendLanes)
	for i := range entries {
		l := entries[i].Partition % sendLanes
		lanes[l] = append(lanes[l], i)
	}
	errs := make([]error, sendLanes)
	var wg sync.WaitGroup
	for l, idx := range lanes {
		if len(idx) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[l] = c.sendLane(ctx, entries, idx, ids, nil)
		}()
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

// sendLane sends the entries at idx (all of them when idx is nil) in order,
// a pipeline of SendBatch XADDs at a time, writing their IDs into ids. On a
// Cluster client, the part of a round trip that failed because of a
// failover is sent again (see sendRetry) before the next round trip. With
// final, an entry that failed for good has its error there and the others
// go on (see sendRound).
func (c *Core) sendLane(ctx context.Context, entries []Entry, idx []int, ids []string, final []error) error {
	n := len(idx)
	if idx == nil {
		n = len(entries)
	}
	at := func(k int) int {
		if idx == nil {
			return k
		}
		return idx[k]
	}
	batch := c.catalog.defaults.SendBatch
	_, cluster := c.catalog.client.(*redis.ClusterClient)
	todo := make([]int, 0, min(batch, n))
	for start := 0; start < n; start += batch {
		end := min(start+batch, n)
		todo = todo[:0]
		for k := start; k < end; k++ {
			todo = append(todo, at(k))
		}
		again, err := c.sendRound(ctx, entries, todo, ids, final)
		if len(again) > 0 && cluster {
			err = c.sendRetry(ctx, entries, again, ids, err, final)
		}
		if err != nil {
			return fmt.Errorf("stream %q: send: %w", c.def.Name, err)
		}
	}
	return nil
}

// sendRound sends the entries at todo in one pipeline and writes the IDs
// of those that were added into ids. It returns the entries to send again
// (see retryable), in order, with the error of the first of them, or, when
// an entry failed otherwise, no entries and that error; with final, such an
// entry's error goes there instead, and the round and the lane go on (the
// entries of joined sends, which fail each on its own).
func (c *Core) sendRound(ctx context.Context, entries []Entry, todo []int, ids []string, final []error) ([]int, error) {
	var size any = strconv.FormatInt(c.def.Size, 10) // boxed once per round
	ec := c.EntryCodec()
	cmds := make([]*redis.Cmd, len(todo))
	// a Send alone goes without a pipeline
	err := rdb.XAdds(ctx, c.catalog.client, cmds, func(k int) []any {
		e := &entries[todo[k]]
		return e.xaddArgs(c.keyArg(e.Partition), size, ec)
	})
	var again []int
	var againErr error
	var failed map[int]bool // partitions with an entry to send again
	for k, cmd := range cmds {
		i := todo[k]
		id, cerr := cmd.Text()
		if cerr == nil {
			ids[i] = id
			if failed[entries[i].Partition] {
				// An earlier entry of this partition failed and this one
				// was added: the node's state changed within the round trip.
				c.catalog.logger.Warn("send: entries of a partition added out of order during a cluster failover",
					"stream", c.def.Name, "partition", entries[i].Partition)
				delete(failed, entries[i].Partition) // once
			}
			continue
		}
		if !retryable(cerr) {
			if final != nil {
				final[i] = cerr
				continue
			}
			return nil, cerr
		}
		if failed == nil {
			failed = map[int]bool{}
		}
		failed[entries[i].Partition] = true
		again = append(again, i)
		againErr = cmp.Or(againErr, cerr)
	}
	if final != nil {
		// The pipeline's error is that of its first failed command: one
		// kept in final does not stop the next round trips of the lane.
		return again, againErr
	}
	return again, cmp.Or(againErr, err)
}

// retryable reports whether an XADD that failed with err may be sent again:
// it did not run (refused, CLUSTERDOWN, MOVED, TRYAGAIN, ...), or its
// connection broke after it was written, when sending it again may add it
// twice, which at-least-once delivery allows.
func retryable(err error) bool { return topology.Classify(err) != topology.Final }

// Send retries on Cluster: after a failed round trip the client's slot map
// is reloaded and the failed entries are sent again, with backoff from
// sendRetryMin to sendRetryMax, until they are added, one fails otherwise,
// ctx ends, or sendRetryFor passed without progress.
const (
	sendRetryMin = 20 * time.Millisecond
	sendRetryMax = 500 * time.Millisecond
	sendRetryFor = 30 * time.Second
)

// sendRetry sends the entries at again until they are added (see the
// constants above); err is the error of the round that left them. final is
// sendRound's.
func (c *Core) sendRetry(ctx context.Context, entries []Entry, again []int, ids []string, err error, final []error) error {
	wait := sendRetryMin
	giveUp := time.Now().Add(sendRetryFor)
	for len(again) > 0 {
		if time.Now().After(giveUp) {
			return fmt.Errorf("%d entries not added after retrying for %s: %w", len(again), sendRetryFor, err)
		}
		topology.Reload(c.catalog.client)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%d entries not added: %w (retrying after: %w)", len(again), ctx.Err(), err)
		case <-t.C:
		}
		before := len(again)
		again, err = c.sendRound(ctx, entries, again, ids, final)
		if len(again) == 0 {
			return err
		}
		if len(again) < before {
			giveUp = time.Now().Add(sendRetryFor)
			wait = sendRetryMin
		} else {
			wait = min(2*wait, sendRetryMax)
		}
	}
	return nil
}
