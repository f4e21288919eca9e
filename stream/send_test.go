package stream

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/core"
)

func TestSendRoutesToPartitions(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 7, 1000} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			cat, c := newCatalog(t, core.Defaults{SendBatch: batch})
			orders, err := Declare[order](cat, "orders", KeyField("customer"))
			if err != nil {
				t.Fatal(err)
			}
			const n = 500
			recs := make([]order, n)
			for i := range recs {
				recs[i] = order{ID: int64(i), Customer: fmt.Sprintf("c%d", i%37), Amount: float64(i)}
			}
			ids, err := orders.SendMany(ctx, recs[:n-1])
			if err != nil {
				t.Fatal(err)
			}
			id, err := orders.Send(ctx, recs[n-1])
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id...)
			if len(ids) != n {
				t.Fatalf("got %d IDs, want %d", len(ids), n)
			}
			total := int64(0)
			for p := range 16 {
				entries := partitionEntries(t, c, orders, p)
				total += int64(len(entries))
				last := int64(-1)
				for _, s := range entries {
					e, o := s.Entry, s.Record
					want, _ := orders.Partition(o)
					if want != p || string(e.Key) != o.Customer {
						t.Fatalf("record %+v (key %q) on partition %d, want %d", o, e.Key, p, want)
					}
					if o != recs[o.ID] || ids[o.ID] != e.ID {
						t.Fatalf("entry %s holds %+v, sent %+v as %s", e.ID, o, recs[o.ID], ids[o.ID])
					}
					if o.ID <= last {
						t.Fatalf("partition %d out of send order: %d after %d", p, o.ID, last)
					}
					last = o.ID
				}
			}
			if total != n {
				t.Fatalf("%d entries over 16 partitions, want %d", total, n)
			}
		})
	}
}

func TestSendHeaders(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, core.Defaults{})
	s, err := Declare[order](cat, "orders", KeyFunc(func(o order) int64 { return o.ID }), Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.SendMessages(ctx, []Message[order]{{Record: order{ID: 9}, Headers: Headers{"traceparent": "00-abc-01", "x": ""}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Partition(order{ID: 9})
	msgs, err := c.XRange(ctx, s.t.Core.PartitionKey(p), ids[0], ids[0]).Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("xrange: %v %v", msgs, err)
	}
	e, err := core.ParseEntry(msgs[0].ID, p, s.t.Core.EntryCodec(), msgs[0].Values)
	if err != nil {
		t.Fatal(err)
	}
	if e.Headers["traceparent"] != "00-abc-01" || len(e.Headers) != 2 || string(e.Key) != "9" || e.Codec != "msgpack" {
		t.Fatalf("entry %+v", e)
	}
}

func TestSendRetention(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, core.Defaults{})
	s, err := Declare[order](cat, "orders", KeyField("customer"), Partitions(1), Size(100))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]order, 5000)
	for i := range recs {
		recs[i] = order{ID: int64(i), Customer: "same"}
	}
	if _, err := s.SendMany(ctx, recs); err != nil {
		t.Fatal(err)
	}
	n, err := c.XLen(ctx, s.t.Core.PartitionKey(0)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// MAXLEN ~ trims whole macro nodes (100 entries by default), so the
	// length stays within one node of the target.
	if n < 100 || n > 300 {
		t.Fatalf("XLEN = %d after 5000 sends with size 100", n)
	}
}

func TestSendEncodingErrorSendsNothing(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, core.Defaults{Codec: JSON})
	type rec struct {
		K string  `json:"k"`
		V float64 `json:"v"`
	}
	s, err := Declare[rec](cat, "r", KeyField("k"), Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	recs := []rec{{"a", 1}, {"b", 2}, {"c", math.NaN()}, {"d", 4}}
	ids, err := s.SendMany(ctx, recs)
	if !errors.Is(err, ErrEncode) || len(ids) != 0 {
		t.Fatalf("SendMany = %v, %v; want ErrEncode and no IDs", ids, err)
	}
	for p := range 2 {
		if n := c.XLen(ctx, s.t.Core.PartitionKey(p)).Val(); n != 0 {
			t.Fatalf("partition %d has %d entries after a failed send", p, n)
		}
	}
	// A key function error is an encoding error too.
	k, err := Declare[rec](cat, "r2", KeyFunc(func(r rec) string { return r.K }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Send(ctx, rec{"a", math.Inf(1)}); !errors.Is(err, ErrEncode) {
		t.Fatalf("Send = %v, want ErrEncode", err)
	}
	// A string that is not UTF-8, which encoding/json would send with
	// U+FFFD in place of its bad bytes.
	ids, err = s.SendMany(ctx, []rec{{"a", 1}, {"caf\xe9", 2}})
	if !errors.Is(err, ErrEncode) || len(ids) != 0 || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("SendMany = %v, %v; want ErrEncode (not valid UTF-8) and no IDs", ids, err)
	}
	for p := range 2 {
		if n := c.XLen(ctx, s.t.Core.PartitionKey(p)).Val(); n != 0 {
			t.Fatalf("partition %d has %d entries after a refused send", p, n)
		}
	}
}

// With the default codec (msgpack) too, a record with a string that is not
// UTF-8 is refused, as are headers with an empty name or a name or value
// that is not UTF-8: readers in other languages would fail on them or get
// other text. Nothing of the send is written; bytes sent as []byte pass.
func TestSendRefusesTextThatIsNotUTF8(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, core.Defaults{})
	type rec struct {
		K    string            `msgpack:"k"`
		Note string            `msgpack:"note"`
		Tags map[string]string `msgpack:"tags"`
		Raw  []byte            `msgpack:"raw"`
	}
	s, err := Declare[rec](cat, "r", KeyField("k"), Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	empty := func() {
		t.Helper()
		for p := range 2 {
			if n := c.XLen(ctx, s.t.Core.PartitionKey(p)).Val(); n != 0 {
				t.Fatalf("partition %d has %d entries after a refused send", p, n)
			}
		}
	}
	for _, bad := range []rec{{K: "a", Note: "caf\xe9"}, {K: "a", Tags: map[string]string{"caf\xe9": "x"}}, {K: "caf\xe9"}} {
		ids, err := s.SendMany(ctx, []rec{{K: "ok"}, bad})
		if !errors.Is(err, ErrEncode) || len(ids) != 0 || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Fatalf("SendMany(%+v) = %v, %v; want ErrEncode (not valid UTF-8) and no IDs", bad, ids, err)
		}
		empty()
	}
	for _, h := range []Headers{{"": "v"}, {"caf\xe9": "v"}, {"n": "caf\xe9"}} {
		ids, err := s.SendMessages(ctx, []Message[rec]{{Record: rec{K: "ok"}}, {Record: rec{K: "ok"}, Headers: h}})
		if !errors.Is(err, ErrEncode) || len(ids) != 0 || !strings.Contains(err.Error(), "header") {
			t.Fatalf("SendMessages(headers %q) = %v, %v; want ErrEncode about the header and no IDs", h, ids, err)
		}
		empty()
	}
	if _, err := s.Send(ctx, rec{K: "ok", Note: "café", Raw: []byte{0xe9, 0xff}}); err != nil {
		t.Fatalf("text and bytes: %v", err)
	}
}

func TestDeclare(t *testing.T) {
	t.Parallel()
	cat, _ := newCatalog(t, core.Defaults{})
	if _, err := Declare[order](cat, "orders", KeyField("customer")); err != nil {
		t.Fatal(err)
	}
	if _, err := Declare[order](cat, "orders", KeyField("customer")); err != nil {
		t.Fatalf("same declaration twice: %v", err)
	}
	bad := []struct {
		name string
		opts []Option
		err  error
	}{
		{"orders", []Option{KeyField("customer"), Partitions(8)}, ErrConflict},
		{"orders", []Option{KeyField("id")}, ErrConflict},
		// The JSON codec names order's fields by their Go names.
		{"orders", []Option{KeyField("Customer"), WithCodec(JSON)}, ErrConflict},
		{"x", []Option{KeyField("customer"), WithCodec(JSON)}, nil},
		{"bad name", []Option{KeyField("customer")}, nil},
		{"x", nil, nil},
		{"x", []Option{KeyField("nope")}, nil},
		{"x", []Option{KeyField("amount")}, nil},
		{"x", []Option{KeyFunc(func(s string) string { return s })}, nil},
		{"x", []Option{KeyField("id"), KeyFunc(func(o order) int64 { return o.ID })}, nil},
		{"x", []Option{KeyField("id"), Partitions(0)}, nil},
		{"x", []Option{KeyField("id"), Size(-1)}, nil},
	}
	for _, tc := range bad {
		_, err := Declare[order](cat, tc.name, tc.opts...)
		if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) {
			t.Errorf("Declare(%q) = %v, want an error (%v)", tc.name, err, tc.err)
		}
	}
	// Fields are matched by msgpack tag, json tag and Go name.
	type tagged struct {
		A string `json:"a_json"`
		B int
	}
	for _, f := range []string{"a_json", "B"} {
		if _, err := Declare[tagged](cat, "t-"+f, KeyField(f)); err != nil {
			t.Errorf("KeyField(%q): %v", f, err)
		}
	}
}

func TestRegistryRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, core.Defaults{})
	s, err := Declare[order](cat, "orders", KeyField("customer"), Partitions(8), Size(1234),
		WithCodec(Compressed(MsgPack, Zstd)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.LoadDefinition(ctx, c, cat.c.Keys().Registry(), "orders"); !errors.Is(err, core.ErrUnknownStream) {
		t.Fatalf("before registration: %v, want ErrUnknownStream", err)
	}
	if err := cat.c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := core.LoadDefinition(ctx, c, cat.c.Keys().Registry(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if definitionOf(got) != s.Definition() || got.Codec != "msgpack+zstd" || got.Partitions != 8 || got.Size != 1234 {
		t.Fatalf("registry holds %+v, declared %+v", got, s.Definition())
	}
	all, err := core.ListDefinitions(ctx, c, cat.c.Keys().Registry())
	if err != nil || len(all) != 1 {
		t.Fatalf("ListDefinitions = %v, %v", all, err)
	}

	// Another process opens the stream from the registry and sends JSON; the
	// typed stream decodes what it wrote, on the same partition.
	other := NewCatalog(c, cat.c.Keys(), core.Defaults{})
	raw, err := core.Open(other.c, got)
	if err != nil {
		t.Fatal(err)
	}
	e, err := raw.EncodeJSON([]byte(`{"id": 9007199254740993, "customer": "c7", "amount": 2.5}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := raw.SendEntries(ctx, []core.Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	want := order{ID: 9007199254740993, Customer: "c7", Amount: 2.5}
	p, _ := s.Partition(want)
	msgs, err := c.XRange(ctx, s.t.Core.PartitionKey(p), ids[0], ids[0]).Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("entry not on partition %d: %v %v", p, msgs, err)
	}
	pe, _ := core.ParseEntry(msgs[0].ID, p, s.t.Core.EntryCodec(), msgs[0].Values)
	if o, err := decode(s, &pe); err != nil || o != want {
		t.Fatalf("decoded %+v, %v; want %+v", o, err, want)
	}

	// Routing may not change under an existing registration.
	conflicting := NewCatalog(c, cat.c.Keys(), core.Defaults{})
	if _, err := Declare[order](conflicting, "orders", KeyField("customer"), Partitions(4)); err != nil {
		t.Fatal(err)
	}
	if err := conflicting.c.Register(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("Register with other partitions = %v, want ErrConflict", err)
	}
	// Size and codec may change.
	resized := NewCatalog(c, cat.c.Keys(), core.Defaults{})
	if _, err := Declare[order](resized, "orders", KeyField("customer"), Partitions(8), Size(10)); err != nil {
		t.Fatal(err)
	}
	if err := resized.c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := core.LoadDefinition(ctx, c, cat.c.Keys().Registry(), "orders"); d.Size != 10 {
		t.Fatalf("size not updated: %+v", d)
	}
}

func TestEncodeJSONErrors(t *testing.T) {
	t.Parallel()
	cat, _ := newCatalog(t, core.Defaults{})
	raw, err := core.Open(cat.c, core.Definition{Name: "x", Partitions: 4, KeyField: "k", Size: 10, Codec: "msgpack"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{``, `{`, `[1]`, `null`, `{"a":1}`, `{"k":1.5}`, `{"k":null}`, `{"k":1} {"k":2}`} {
		if _, err := raw.EncodeJSON([]byte(in), nil); err == nil {
			t.Errorf("EncodeJSON(%q) succeeded", in)
		}
	}
	if _, err := core.Open(cat.c, core.Definition{Name: "y", Partitions: 4, Size: 10, Codec: "msgpack"}); err == nil {
		t.Error("Open without a key field succeeded")
	}
	if _, err := core.Open(cat.c, core.Definition{Name: "z", Partitions: 4, KeyField: "k", Size: 10, Codec: "avro"}); err == nil {
		t.Error("Open with an unknown codec succeeded")
	}
}
