package stream

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// rawFields returns the field, value list of every entry of partition p of
// s, as Redis holds it.
func rawFields[T any](t *testing.T, c *redis.Client, s *Stream[T], p int) [][]string {
	t.Helper()
	msgs, err := c.XRange(ctxT(t), s.t.Core.PartitionKey(p), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	// XRANGE's map loses the order: read the reply as it comes.
	out := make([][]string, 0, len(msgs))
	for _, m := range msgs {
		raw, err := c.Do(ctxT(t), "XRANGE", s.t.Core.PartitionKey(p), m.ID, m.ID).Slice()
		if err != nil || len(raw) != 1 {
			t.Fatalf("XRANGE %s: %v %v", m.ID, raw, err)
		}
		var fields []string
		for _, f := range raw[0].([]any)[1].([]any) {
			fields = append(fields, f.(string))
		}
		out = append(out, fields)
	}
	return out
}

// An entry of the stream's entry codec has the fields key, data and h:NAME,
// in this order, and no codec field; the registry records the entry codec.
func TestEntryLayout(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, core.Defaults{})
	s, err := Declare[order](cat, "orders", KeyField("customer"), Partitions(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendMessages(ctx, []Message[order]{{Record: order{ID: 1, Customer: "c-1"}},
		{Record: order{ID: 2, Customer: "c-1"}, Headers: Headers{"traceparent": "00-abc-01", "b": "2"}}}); err != nil {
		t.Fatal(err)
	}
	data, _ := MsgPack.Marshal(&order{ID: 1, Customer: "c-1"})
	got := rawFields(t, c, s, 0)
	if want := []string{"key", "c-1", "data", string(data)}; !slices.Equal(got[0], want) {
		t.Fatalf("entry fields %q, want %q", got[0], want)
	}
	if want := []string{"key", "c-1", "data", "", "h:b", "2", "h:traceparent", "00-abc-01"}; len(got[1]) != len(want) ||
		got[1][0] != want[0] || got[1][2] != want[2] || !slices.Equal(got[1][4:], want[4:]) {
		t.Fatalf("entry with headers has fields %q, want %q", got[1], want)
	}
	def, err := core.LoadDefinition(ctx, c, cat.c.Keys().Registry(), "orders")
	if err != nil || def.EntryCodec != "msgpack" || def.Codec != "msgpack" {
		t.Fatalf("registry holds %+v, %v; want entry codec msgpack", def, err)
	}
}

// After a codec change the registry keeps the entry codec of the stream's
// first declaration: new entries carry their codec, and both old and new
// entries decode, for the app of either codec.
func TestEntryLayoutCodecChange(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	c, prefix := redistest.Client(t)
	declare := func(codec Codec) *Stream[order] {
		s, err := Declare[order](NewCatalog(c, rdb.NewKeySpace(prefix, "shop"), core.Defaults{}), "orders",
			KeyFunc(func(o order) string { return o.Customer }), Partitions(1), WithCodec(codec))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := declare(MsgPack)
	if _, err := before.Send(ctx, order{ID: 1, Customer: "c-1"}); err != nil {
		t.Fatal(err)
	}
	after := declare(JSON)
	if _, err := after.Send(ctx, order{ID: 2, Customer: "c-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := before.Send(ctx, order{ID: 3, Customer: "c-1"}); err != nil {
		t.Fatal(err)
	}
	got := rawFields(t, c, after, 0)
	if len(got) != 3 || len(got[0]) != 4 || !slices.Equal(got[1][:4], []string{"key", "c-1", "codec", "json"}) || len(got[2]) != 4 {
		t.Fatalf("fields after a codec change: %q", got)
	}
	def, err := core.LoadDefinition(ctx, c, rdb.NewKeySpace(prefix, "shop").Registry(), "orders")
	if err != nil || def.Codec != "json" || def.EntryCodec != "msgpack" {
		t.Fatalf("registry holds %+v, %v; want codec json, entry codec msgpack", def, err)
	}
	for _, s := range []*Stream[order]{before, after} {
		msgs, err := c.XRange(ctx, s.t.Core.PartitionKey(0), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			e, err := core.ParseEntry(m.ID, 0, s.t.Core.EntryCodec(), m.Values)
			if err != nil {
				t.Fatal(err)
			}
			o, err := decode(s, &e)
			if err != nil || o.ID != int64(i+1) {
				t.Fatalf("%s app: entry %d decoded %+v, %v", s.t.Core.Codec().Name(), i, o, err)
			}
		}
	}
}

// Redis's bytes per entry of a stream leat writes are within 5% of raw
// XADDs of the same fields an entry must carry, its key and its encoded
// record: the layout adds nothing per entry. MEMORY USAGE (every element
// counted) is deterministic, up to the few bytes entry IDs of different
// milliseconds take.
func TestEntryMemoryOverRawXAdd(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, core.Defaults{})
	const n, key = 5000, "customer-1"
	rec := bytes.Repeat([]byte{'x'}, 98) // encoded: a bin 8 header and 98 bytes
	data, _ := MsgPack.Marshal(&rec)
	if len(data) != 100 {
		t.Fatalf("payload of %d bytes", len(data))
	}
	s, err := Declare[[]byte](cat, "mem", KeyFunc(func([]byte) string { return key }), Partitions(1), Size(2*n))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = rec
	}
	if _, err := s.SendMany(ctx, recs); err != nil {
		t.Fatal(err)
	}
	perEntry := func(k string) float64 {
		b, err := c.MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		return float64(b) / n
	}
	raw := func(name string, fields ...any) float64 {
		k := cat.c.Keys().Prefix + ":raw:" + name
		pipe := c.Pipeline()
		for range n {
			pipe.Do(ctx, append([]any{"XADD", k, "MAXLEN", "~", fmt.Sprint(2 * n), "*"}, fields...)...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		return perEntry(k)
	}
	leat := perEntry(s.t.Core.PartitionKey(0))
	keyed := raw("keyed", "key", key, "data", data)
	bare := raw("bare", "d", data)
	old := raw("old", "key", key, "codec", "msgpack", "data", data)
	t.Logf("bytes/entry: leat %.1f, raw key+data %.1f (%.3fx), raw data only %.1f (%.3fx), previous layout %.1f (%.3fx)",
		leat, keyed, leat/keyed, bare, leat/bare, old, old/bare)
	if leat > 1.05*keyed {
		t.Errorf("leat stores %.1f bytes per entry, %.3fx raw XADD of the same key and data (%.1f); want at most 1.05x", leat, leat/keyed, keyed)
	}
	if leat >= old {
		t.Errorf("leat stores %.1f bytes per entry, no less than the previous layout (%.1f)", leat, old)
	}
}
