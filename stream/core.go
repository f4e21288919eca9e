package stream

import (
	"context"
	"fmt"
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

	regMu      sync.Mutex
	registered bool
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
func (c *Core) PartitionKey(p int) string { return c.catalog.keys.Partition(c.def.Name, p) }

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

// SendEntries sends entries, already encoded and keyed, to their partitions
// (Entry.Partition) with pipelined XADDs, SendBatch per round trip, and
// returns their IDs in the same order. Entries of one partition are appended
// in slice order. When it fails part way, the returned IDs are those of the
// entries that were sent, a prefix of entries.
func (c *Core) SendEntries(ctx context.Context, entries []Entry) ([]string, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	if err := c.Register(ctx); err != nil {
		return nil, err
	}
	batch := c.catalog.defaults.SendBatch
	ids := make([]string, 0, len(entries))
	cmds := make([]*redis.StringCmd, 0, min(batch, len(entries)))
	for start := 0; start < len(entries); start += batch {
		chunk := entries[start:min(start+batch, len(entries))]
		cmds = cmds[:0]
		pipe := c.catalog.client.Pipeline()
		for i := range chunk {
			e := &chunk[i]
			if e.Partition < 0 || e.Partition >= c.def.Partitions {
				return ids, fmt.Errorf("stream %q: partition %d out of range", c.def.Name, e.Partition)
			}
			cmds = append(cmds, pipe.XAdd(ctx, &redis.XAddArgs{
				Stream: c.PartitionKey(e.Partition),
				MaxLen: c.def.Size,
				Approx: true,
				Values: e.values(),
			}))
		}
		_, err := pipe.Exec(ctx)
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				break
			}
			ids = append(ids, cmd.Val())
		}
		if err != nil {
			return ids, fmt.Errorf("stream %q: send: %w", c.def.Name, err)
		}
	}
	return ids, nil
}
