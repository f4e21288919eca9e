package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// Definition is what the registry in Redis records about a stream, so that
// tools without the app's Go code (the leat CLI, programs in other languages)
// can route and decode its entries.
type Definition struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	// KeyField is the encoded name of the record field holding the partition
	// key. It is empty when the key is computed by a Go function.
	KeyField string `json:"key_field,omitempty"`
	// Size is the approximate maximum length of each partition (XADD MAXLEN ~).
	Size int64 `json:"size"`
	// Codec is the name of the codec the stream's latest declaration
	// encodes records with, e.g. "msgpack+zstd".
	Codec string `json:"codec"`
	// EntryCodec is the codec of the stream's entries that carry no codec
	// field. The stream's first registration sets it to its codec and later
	// ones keep it: after a codec change, new entries carry their codec and
	// the entries written before still decode.
	EntryCodec string `json:"entry_codec,omitempty"`
	// WhenFull says what a send does when retention would trim entries a
	// processor has not processed: "" trims them (and the loss is
	// reported to the processor's failure policy), "refuse" fails with
	// ErrFull, "wait" waits for room.
	WhenFull Full `json:"when_full,omitempty"`
}

// Full is what a send does when a partition has no room left for its
// entries without trimming unprocessed ones.
type Full string

// What a send does when a partition is full of unprocessed entries.
const (
	FullTrim   Full = ""       // trim the oldest entries (retention wins)
	FullRefuse Full = "refuse" // fail with ErrFull; nothing of that partition is sent
	FullWait   Full = "wait"   // wait until the processors made room (or ctx ends)
)

func (d Definition) validate() error {
	switch {
	case d.Partitions < 1 || d.Partitions > 65536:
		return fmt.Errorf("stream %q: partition count %d out of range 1..65536", d.Name, d.Partitions)
	case d.Size < 1:
		return fmt.Errorf("stream %q: partition size %d must be positive", d.Name, d.Size)
	case d.WhenFull != FullTrim && d.WhenFull != FullRefuse && d.WhenFull != FullWait:
		return fmt.Errorf("stream %q: unknown full-partition policy %q (want trim, refuse or wait)", d.Name, d.WhenFull)
	}
	return nil
}

// register writes d to the registry hash and returns the stream's entry
// codec (Definition.EntryCodec; "" when the registry keeps a definition
// without one), failing with ErrConflict when the registry holds a
// definition of the same stream with other routing.
func register(ctx context.Context, c redis.UniversalClient, registry string, d Definition) (string, error) {
	d.EntryCodec = "" // settled by the script
	b, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	entryCodec, conflict, ok, err := rdb.RegisterStream(ctx, c, registry, d.Name, string(b), d.Partitions, d.KeyField, d.Codec)
	if topology.Denied(err) {
		entryCodec, conflict, ok, err = registered(ctx, c, registry, d, err)
	}
	if err != nil {
		return "", fmt.Errorf("register stream %q: %w", d.Name, err)
	}
	if !ok {
		var old Definition
		_ = json.Unmarshal([]byte(conflict), &old)
		return "", fmt.Errorf("%w: stream %q is registered with %d partitions and key field %q, declared with %d and %q; "+
			"changing routing would break per-key order (use a new stream name)",
			ErrConflict, d.Name, old.Partitions, old.KeyField, d.Partitions, d.KeyField)
	}
	return entryCodec, nil
}

// registered is register_stream.lua's answer for d without a write, for a
// Redis user that may only read the registry (a producer's ACL; denied is
// the refusal of the write): the definition registered, by its workers or an
// operator, is kept when its routing is d's, and its entry codec applies.
// A stream not registered yet is the denied error.
func registered(ctx context.Context, c redis.UniversalClient, registry string, d Definition, denied error) (entryCodec, conflict string, ok bool, err error) {
	cur, err := rdb.StreamDefinition(ctx, c, registry, d.Name)
	if errors.Is(err, redis.Nil) {
		return "", "", false, fmt.Errorf("the Redis user may not write the registry, and the stream is not registered yet "+
			"(start one of its workers first): %w", denied)
	}
	if err != nil {
		return "", "", false, err
	}
	var old Definition
	if json.Unmarshal([]byte(cur), &old) != nil {
		return "", "", false, denied // register_stream.lua would replace it
	}
	switch {
	case old.Partitions != d.Partitions:
		return "", cur, false, nil
	case old.KeyField != d.KeyField && old.KeyField != "":
		return "", cur, false, nil
	}
	return old.EntryCodec, "", true, nil
}

// LoadDefinition reads the definition of stream name from the registry hash.
// It returns ErrUnknownStream when there is none.
func LoadDefinition(ctx context.Context, c redis.UniversalClient, registry, name string) (Definition, error) {
	s, err := rdb.StreamDefinition(ctx, c, registry, name)
	if errors.Is(err, redis.Nil) {
		return Definition{}, fmt.Errorf("%w %q", ErrUnknownStream, name)
	}
	if err != nil {
		return Definition{}, err
	}
	return ParseDefinition(name, []byte(s))
}

// ListDefinitions reads every stream definition of the registry hash.
func ListDefinitions(ctx context.Context, c redis.UniversalClient, registry string) ([]Definition, error) {
	m, err := rdb.StreamDefinitions(ctx, c, registry)
	if err != nil {
		return nil, err
	}
	out := make([]Definition, 0, len(m))
	for name, s := range m {
		d, err := ParseDefinition(name, []byte(s))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseDefinition reads the registry entry of stream name. It refuses an
// entry no declaration writes (another stream's name, a partition count or
// size out of range, an unknown full-partition policy), so that tools never
// route by a corrupt or hand-edited entry. The codec is checked by Open: a
// stream's own codec is known only to its app.
func ParseDefinition(name string, b []byte) (Definition, error) {
	var d Definition
	if err := json.Unmarshal(b, &d); err != nil {
		return Definition{}, fmt.Errorf("registry entry of stream %q is not valid JSON: %w", name, err)
	}
	if d.Name != name {
		return Definition{}, fmt.Errorf("registry entry of stream %q names stream %q", name, d.Name)
	}
	if err := d.validate(); err != nil {
		return Definition{}, fmt.Errorf("registry entry: %w", err)
	}
	return d, nil
}

// Open returns the untyped stream of a registry definition, declared in cat,
// whose records are JSON objects (map[string]any). Integers keep their exact
// value; the key field must be set (for streams keyed by a Go function, pass
// the field that holds the key). It never records a schema; LoadSchema reads
// the one the program declaring the stream recorded, for EncodeJSON to check.
func Open(cat *Catalog, def Definition) (*Core, error) {
	codec, err := LookupCodec(def.Codec)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", def.Name, err)
	}
	if def.KeyField == "" {
		return nil, fmt.Errorf("stream %q: no key field to route JSON records by", def.Name)
	}
	s, err := Declare[map[string]any](cat, def.Name, Spec{Partitions: def.Partitions, Size: def.Size, Codec: codec, KeyField: def.KeyField, WhenFull: def.WhenFull})
	if err != nil {
		return nil, err
	}
	c := s.Core
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if !c.schema.opened && !c.registered {
		c.schema.opened = true
		c.fromJSON = c.checkSchema(c.fromJSON)
	}
	return c, nil
}
