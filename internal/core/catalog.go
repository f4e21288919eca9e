package core

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Defaults are the settings a stream takes when its declaration does not say.
type Defaults struct {
	Partitions int   // default 16
	Size       int64 // default 50,000
	Codec      Codec // default MsgPack
	SendBatch  int   // XADDs per pipelined round trip; default 1,000
}

const (
	// DefaultPartitions is the partition count of a stream by default.
	DefaultPartitions = 16
	// DefaultSize is the approximate maximum length of a partition by default.
	DefaultSize = 50_000
	// DefaultSendBatch is how many XADDs one pipelined round trip carries.
	DefaultSendBatch = 1000
)

func (d Defaults) withDefaults() Defaults {
	if d.Partitions == 0 {
		d.Partitions = DefaultPartitions
	}
	if d.Size == 0 {
		d.Size = DefaultSize
	}
	if d.Codec == nil {
		d.Codec = MsgPack
	}
	if d.SendBatch == 0 {
		d.SendBatch = DefaultSendBatch
	}
	return d
}

// A Catalog holds the streams declared by one app and the connection they
// send on. An App owns one; tools build one from the registry.
type Catalog struct {
	client   redis.UniversalClient
	keys     rdb.KeySpace
	defaults Defaults
	logger   *slog.Logger

	mu      sync.Mutex
	streams map[string]*Core
}

// NewCatalog returns an empty catalog for the app of space.
func NewCatalog(client redis.UniversalClient, space rdb.KeySpace, d Defaults, logger *slog.Logger) *Catalog {
	if logger == nil {
		logger = slog.Default()
	}
	return &Catalog{client: client, keys: space, defaults: d.withDefaults(), logger: logger, streams: map[string]*Core{}}
}

// Client returns the Redis client the catalog's streams use.
func (c *Catalog) Client() redis.UniversalClient { return c.client }

// Keys returns the key space of the catalog's app.
func (c *Catalog) Keys() rdb.KeySpace { return c.keys }

// Defaults returns the stream defaults, with zero values filled in.
func (c *Catalog) Defaults() Defaults { return c.defaults }

// Lookup returns the declared stream called name.
func (c *Catalog) Lookup(name string) (*Core, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.streams[name]
	return s, ok
}

// Streams returns the declared streams sorted by name.
func (c *Catalog) Streams() []*Core {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Core, 0, len(c.streams))
	for _, s := range c.streams {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Core) int { return strings.Compare(a.def.Name, b.def.Name) })
	return out
}

// add records core, or returns the existing core of the same name when its
// settings are the same. Different settings are an ErrConflict.
func (c *Catalog) add(core *Core) (*Core, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.streams[core.def.Name]; ok {
		if old.def != core.def || old.recordType != core.recordType {
			return nil, fmt.Errorf("%w: stream %q is already declared as %+v of %s, now as %+v of %s",
				ErrConflict, core.def.Name, old.def, old.recordType, core.def, core.recordType)
		}
		return old, nil
	}
	c.streams[core.def.Name] = core
	return core, nil
}

// Register writes the definition of every declared stream to the registry in
// Redis. It fails with ErrConflict when the registry routes one of them
// differently.
func (c *Catalog) Register(ctx context.Context) error {
	for _, s := range c.Streams() {
		if err := s.Register(ctx); err != nil {
			return err
		}
	}
	return nil
}
