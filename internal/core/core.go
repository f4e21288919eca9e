package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Core is the untyped part of a stream: its definition, routing, codec and the
// batched sending of raw entries. Typed streams and the CLI are built on it.
type Core struct {
	def        Definition
	codec      Codec
	catalog    *Catalog
	recordType string // Go type of records, for conflict messages
	fromJSON   func([]byte) (Entry, error)
	typed      any // the *Typed[T] of the declaration

	regMu      sync.Mutex
	registered bool

	keysOnce sync.Once
	partKeys []string // PartitionKey of every partition
}

// Definition returns the stream's definition.
func (c *Core) Definition() Definition { return c.def }

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
	c.keysOnce.Do(func() {
		c.partKeys = make([]string, c.def.Partitions)
		for i := range c.partKeys {
			c.partKeys[i] = c.catalog.keys.Partition(c.def.Name, i)
		}
	})
	if p < 0 || p >= len(c.partKeys) {
		return c.catalog.keys.Partition(c.def.Name, p)
	}
	return c.partKeys[p]
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
	if err := register(ctx, c.catalog.client, c.catalog.keys.Registry(), c.def); err != nil {
		return err
	}
	c.registered = true
	return nil
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
	ids := make([]string, len(entries))
	if c.def.WhenFull != FullTrim {
		return ids, c.sendGuarded(ctx, entries, ids)
	}
	batch := c.catalog.defaults.SendBatch
	_, cluster := c.catalog.client.(*redis.ClusterClient) // its pipelines fan out by node already
	if len(entries) <= batch || cluster {
		return ids, c.sendLane(ctx, entries, nil, ids)
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
			errs[l] = c.sendLane(ctx, entries, idx, ids)
		}()
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

// sendLane sends the entries at idx (all of them when idx is nil) in order,
// a pipeline of SendBatch XADDs at a time, writing their IDs into ids.
func (c *Core) sendLane(ctx context.Context, entries []Entry, idx []int, ids []string) error {
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
	size := strconv.FormatInt(c.def.Size, 10)
	cmds := make([]*redis.Cmd, 0, min(batch, n))
	for start := 0; start < n; start += batch {
		end := min(start+batch, n)
		cmds = cmds[:0]
		pipe := c.catalog.client.Pipeline()
		for k := start; k < end; k++ {
			e := &entries[at(k)]
			cmds = append(cmds, pipe.Do(ctx, e.xaddArgs(c.PartitionKey(e.Partition), size)...))
		}
		_, err := pipe.Exec(ctx)
		for k, cmd := range cmds {
			if id, err := cmd.Text(); err == nil {
				ids[at(start+k)] = id
			}
		}
		if err != nil {
			return fmt.Errorf("stream %q: send: %w", c.def.Name, err)
		}
	}
	return nil
}
