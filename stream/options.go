package stream

import (
	"fmt"

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
		return nil
	})
}
