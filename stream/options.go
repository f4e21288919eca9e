package stream

import (
	"fmt"
	"reflect"

	"github.com/leatdev/leat/internal/core"
)

// An Option tweaks one stream declaration.
type Option interface{ apply(*core.Spec) error }

type optionFunc func(*core.Spec) error

func (f optionFunc) apply(c *core.Spec) error { return f(c) }

// Partitions sets the stream's partition count (default: the app's, 16).
func Partitions(n int) Option {
	return optionFunc(func(c *core.Spec) error {
		if n < 1 || n > 65536 {
			return fmt.Errorf("partition count %d out of range 1..65536", n)
		}
		c.Partitions = n
		return nil
	})
}

// Size sets the approximate maximum length of each partition, enforced with
// XADD MAXLEN ~ (default: the app's, 50,000).
func Size(n int64) Option {
	return optionFunc(func(c *core.Spec) error {
		if n < 1 {
			return fmt.Errorf("partition size %d must be positive", n)
		}
		c.Size = n
		return nil
	})
}

// WithCodec sets the codec records are encoded with (default: the app's,
// MsgPack). Wrap it with Compressed to compress payloads.
func WithCodec(c Codec) Option {
	return optionFunc(func(d *core.Spec) error {
		if c == nil {
			return fmt.Errorf("codec is nil")
		}
		d.Codec = c
		return nil
	})
}

// KeyField partitions records by the named field. The name is the field's
// encoded name under the stream's codec: for msgpack (the default) its
// msgpack tag, else its json tag, else its Go name; for JSON its json tag,
// else its Go name. JSON records sent by the CLI name fields the same way.
// The field must hold a string, an integer or a bool. Records of map type
// are looked up by key.
func KeyField(name string) Option {
	return optionFunc(func(c *core.Spec) error {
		if name == "" {
			return fmt.Errorf("key field name is empty")
		}
		c.KeyField = name
		return nil
	})
}

// KeyType is what a partition key function may return.
type KeyType interface {
	~string | ~[]byte | ~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~bool
}

// KeyFunc partitions records by the key fn returns. T must be the stream's
// record type.
func KeyFunc[T any, K KeyType](fn func(T) K) Option {
	return optionFunc(func(c *core.Spec) error {
		if fn == nil {
			return fmt.Errorf("key function is nil")
		}
		c.KeyFunc = func(r *T) ([]byte, error) { return core.KeyBytes(fn(*r)) }
		c.KeyFuncFor = fmt.Sprintf("%T", *new(T))
		c.KeyKind = core.KeyKindOf(reflect.TypeFor[K]())
		return nil
	})
}

// Full is what a send does when a partition of the stream has no room left
// for new entries without trimming entries a processor has not processed
// yet: Trim (the default), Refuse or Wait. See WhenFull. Its value is the
// one recorded in the stream's definition (Definition.WhenFull).
type Full string

// Full-partition policies.
const (
	// Trim keeps the partition at its size whatever the processors did:
	// an entry trimmed before it was processed is reported to their
	// failure policy (ErrTrimmed), a log line and a metric. Sends never
	// wait.
	Trim Full = ""
	// Refuse fails a send with ErrFull, for the partitions without room;
	// nothing of those partitions is sent (the others are).
	Refuse Full = "refuse"
	// Wait makes a send wait, with backoff, until the processors made
	// room, or its context ends.
	Wait Full = "wait"
)

// WhenFull sets what a send does when retention would otherwise trim
// entries that a processor has not processed (read and acknowledged):
// Trim (the default), Refuse or Wait. With Refuse or Wait, each partition's
// entries are added by a script that checks every consumer group's unread
// and pending entries first, so a backlog at the partition size never loses
// an unprocessed entry; the price is a script per partition and round trip
// instead of plain XADDs, and producers that fail or slow down with their
// slowest processor. Only processors whose consumer group exists are
// protected, and Redis 7 is needed (older servers do not report a group's
// lag, and every entry then counts as unread). The setting is recorded in
// the registry, so the CLI's sends follow it.
func WhenFull(f Full) Option {
	return optionFunc(func(c *core.Spec) error {
		switch f {
		case Trim, Refuse, Wait:
			c.WhenFull = core.Full(f)
			return nil
		}
		return fmt.Errorf("unknown full-partition policy %q (want stream.Trim, stream.Refuse or stream.Wait)", f)
	})
}
