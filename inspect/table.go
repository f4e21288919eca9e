package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// ErrUnknownTable is returned by TableValues when the registry records no
// such processor, or no such table of it.
var ErrUnknownTable = errors.New("unknown table")

// MaxTableKeys bounds the keys of one TableValues call.
const MaxTableKeys = 100

// TableValues returns the values of keys in the table called table of
// processor on stream (stream.DeclareTable), as the acknowledged events
// left them, each as JSON: null for a key without a value. Each is read
// from the partition its key's events go to and decoded with the codec the
// processor's workers recorded with its definition. It fails with an error
// matching ErrUnknownStream or ErrUnknownTable when the registry does not
// record the stream, or the processor and its table.
//
// Cost: the stream's and the processor's definitions (two HGET), then one
// pipelined round trip of one HGET per key.
func (i *Inspector) TableValues(ctx context.Context, stream, processor, table string, keys []string) ([]json.RawMessage, error) {
	if len(keys) == 0 || len(keys) > MaxTableKeys {
		return nil, fmt.Errorf("%d keys: give 1 to %d", len(keys), MaxTableKeys)
	}
	partitions, codec, err := i.table(ctx, stream, processor, table)
	if err != nil {
		return nil, err
	}
	hashes := make([]string, len(keys))
	for j, k := range keys {
		hashes[j] = i.k.Table(stream, processor, table, core.PartitionOf([]byte(k), partitions))
	}
	values, ok, err := rdb.TableGets(ctx, i.c, hashes, keys)
	if err != nil {
		return nil, fmt.Errorf("read table %q: %w", table, err)
	}
	out := make([]json.RawMessage, len(keys))
	for j, data := range values {
		if !ok[j] {
			out[j] = json.RawMessage("null")
			continue
		}
		if out[j], err = valueJSON(codec, data); err != nil {
			return nil, fmt.Errorf("table %q: key %q: %w", table, keys[j], err)
		}
	}
	return out, nil
}

// TableEntry is a key of a table and its value as JSON.
type TableEntry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// TableScan returns up to limit keys of the table called table of
// processor on stream with their values as JSON, partition by partition in
// HSCAN order (COUNT 100), and whether the table holds more. It fails as
// TableValues does.
//
// Cost: the two definitions, then HSCAN round trips until limit keys were
// read: it grows with limit, and with the number of partitions holding
// none of the table's keys.
func (i *Inspector) TableScan(ctx context.Context, stream, processor, table string, limit int) ([]TableEntry, bool, error) {
	if limit < 1 {
		return nil, false, fmt.Errorf("limit %d: give at least 1", limit)
	}
	partitions, codec, err := i.table(ctx, stream, processor, table)
	if err != nil {
		return nil, false, err
	}
	var out []TableEntry
	for p := range partitions {
		hash := i.k.Table(stream, processor, table, p)
		var cursor uint64
		for {
			kv, next, err := rdb.TableScan(ctx, i.c, hash, cursor, 100)
			if err != nil {
				return nil, false, fmt.Errorf("read table %q: %w", table, err)
			}
			for j := 0; j+1 < len(kv); j += 2 {
				if len(out) == limit {
					return out, true, nil
				}
				v, err := valueJSON(codec, []byte(kv[j+1]))
				if err != nil {
					return nil, false, fmt.Errorf("table %q: key %q: %w", table, kv[j], err)
				}
				out = append(out, TableEntry{Key: kv[j], Value: v})
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return out, false, nil
}

// table returns the partition count of stream and the codec of the table
// called table of processor, from the registry.
func (i *Inspector) table(ctx context.Context, stream, processor, table string) (int, core.Codec, error) {
	def, err := core.LoadDefinition(ctx, i.c, i.k.Registry(), stream)
	if errors.Is(err, core.ErrUnknownStream) {
		return 0, nil, fmt.Errorf("%w %q: it is not in the registry of app %q", ErrUnknownStream, stream, i.app)
	}
	if err != nil {
		return 0, nil, err
	}
	full := stream + "/" + processor
	raw, ok, err := rdb.ProcessorDefinition(ctx, i.c, i.k, full)
	if err != nil {
		return 0, nil, fmt.Errorf("read the processor registry: %w", err)
	}
	if !ok {
		return 0, nil, fmt.Errorf("%w: processor %s is not in the registry of app %q (its workers record it when they start)", ErrUnknownTable, full, i.app)
	}
	var pd processorDef
	if err := json.Unmarshal(raw, &pd); err != nil {
		return 0, nil, fmt.Errorf("processor %s: its registry entry: %w", full, err)
	}
	at := slices.IndexFunc(pd.Tables, func(d core.TableDef) bool { return d.Name == table })
	if at < 0 {
		known := "it has none"
		if len(pd.Tables) > 0 {
			names := make([]string, len(pd.Tables))
			for j, d := range pd.Tables {
				names[j] = d.Name
			}
			known = "it has " + strings.Join(names, ", ")
		}
		return 0, nil, fmt.Errorf("%w: processor %s has no table %q (%s; its workers record its tables when they start)", ErrUnknownTable, full, table, known)
	}
	codec, err := tableCodec(pd.Tables[at].Codec)
	if err != nil {
		return 0, nil, fmt.Errorf("table %q: %w", table, err)
	}
	return def.Partitions, codec, nil
}

// valueJSON returns a value encoded with codec as JSON: a JSON value as it
// is, another decoded and written again.
func valueJSON(codec core.Codec, data []byte) (json.RawMessage, error) {
	if codec.Name() == core.JSON.Name() {
		return data, nil
	}
	var v any
	if err := codec.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.Marshal(jsonable(v))
}

// jsonable turns maps with keys that are not strings (msgpack allows them)
// into maps of their keys' text, so encoding/json can write them.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
		return v
	}
	return v
}
