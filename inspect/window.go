package inspect

import (
	"errors"
	"strconv"
	"strings"

	"github.com/leatdev/leat/internal/core"
)

// tableCodec returns the codec of a table as the registry names it; for a
// windowed table (stream.DeclareWindowed), one that reads its fields'
// records (windowCodec).
func tableCodec(name string) (core.Codec, error) {
	inner, ok := strings.CutPrefix(name, core.WindowCodecPrefix)
	if !ok {
		return core.LookupCodec(name)
	}
	c, err := core.LookupCodec(inner)
	if err != nil {
		return nil, err
	}
	return windowCodec{inner: c}, nil
}

// windowCodec decodes the fields of a windowed table's hash for
// valueJSON: a window record as {"end", "closed", "value"}, the event time
// and late count as numbers. It encodes nothing: tools only read.
type windowCodec struct{ inner core.Codec }

func (c windowCodec) Name() string { return core.WindowCodecPrefix + c.inner.Name() }

func (c windowCodec) Marshal(any) ([]byte, error) {
	return nil, errors.New("windowed tables are written by their processor only")
}

func (c windowCodec) Unmarshal(data []byte, v any) error {
	out, ok := v.(*any)
	if !ok {
		return errors.New("windowed table values decode into an any")
	}
	if n, err := strconv.ParseInt(string(data), 10, 64); err == nil {
		*out = n // the event time, or the late count
		return nil
	}
	rec, err := core.DecodeWindow(data)
	if err != nil {
		return err
	}
	var value any
	if err := c.inner.Unmarshal(rec.Data, &value); err != nil {
		return err
	}
	*out = map[string]any{"end": rec.End, "closed": rec.Closed, "value": value}
	return nil
}
