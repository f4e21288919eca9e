package stream_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/leatdev/leat/stream"
)

func TestSendRoutesToPartitions(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 7, 1000} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			cat, c := newCatalog(t, stream.Defaults{SendBatch: batch})
			orders, err := stream.Declare[order](cat, "orders", stream.KeyField("customer"))
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
				key := orders.Core().PartitionKey(p)
				msgs, err := c.XRange(ctx, key, "-", "+").Result()
				if err != nil {
					t.Fatal(err)
				}
				total += int64(len(msgs))
				last := int64(-1)
				for _, m := range msgs {
					e, err := stream.ParseEntry(m.ID, p, m.Values)
					if err != nil {
						t.Fatal(err)
					}
					o, err := orders.Decode(&e)
					if err != nil {
						t.Fatal(err)
					}
					want, _ := orders.Partition(o)
					if want != p || string(e.Key) != o.Customer {
						t.Fatalf("record %+v (key %q) on partition %d, want %d", o, e.Key, p, want)
					}
					if o != recs[o.ID] || ids[o.ID] != m.ID {
						t.Fatalf("entry %s holds %+v, sent %+v as %s", m.ID, o, recs[o.ID], ids[o.ID])
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
	cat, c := newCatalog(t, stream.Defaults{})
	s, err := stream.Declare[order](cat, "orders", stream.KeyFunc(func(o order) int64 { return o.ID }), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.SendMessages(ctx, []stream.Message[order]{{Record: order{ID: 9}, Headers: stream.Headers{"traceparent": "00-abc-01", "x": ""}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Partition(order{ID: 9})
	msgs, err := c.XRange(ctx, s.Core().PartitionKey(p), ids[0], ids[0]).Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("xrange: %v %v", msgs, err)
	}
	e, err := stream.ParseEntry(msgs[0].ID, p, msgs[0].Values)
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
	cat, c := newCatalog(t, stream.Defaults{})
	s, err := stream.Declare[order](cat, "orders", stream.KeyField("customer"), stream.Partitions(1), stream.Size(100))
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
	n, err := c.XLen(ctx, s.Core().PartitionKey(0)).Result()
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
	cat, c := newCatalog(t, stream.Defaults{Codec: stream.JSON})
	type rec struct {
		K string  `json:"k"`
		V float64 `json:"v"`
	}
	s, err := stream.Declare[rec](cat, "r", stream.KeyField("k"), stream.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	recs := []rec{{"a", 1}, {"b", 2}, {"c", math.NaN()}, {"d", 4}}
	ids, err := s.SendMany(ctx, recs)
	if !errors.Is(err, stream.ErrEncode) || len(ids) != 0 {
		t.Fatalf("SendMany = %v, %v; want ErrEncode and no IDs", ids, err)
	}
	for p := range 2 {
		if n := c.XLen(ctx, s.Core().PartitionKey(p)).Val(); n != 0 {
			t.Fatalf("partition %d has %d entries after a failed send", p, n)
		}
	}
	// A key function error is an encoding error too.
	k, err := stream.Declare[rec](cat, "r2", stream.KeyFunc(func(r rec) string { return r.K }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Send(ctx, rec{"a", math.Inf(1)}); !errors.Is(err, stream.ErrEncode) {
		t.Fatalf("Send = %v, want ErrEncode", err)
	}
}

func TestDeclare(t *testing.T) {
	t.Parallel()
	cat, _ := newCatalog(t, stream.Defaults{})
	if _, err := stream.Declare[order](cat, "orders", stream.KeyField("customer")); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Declare[order](cat, "orders", stream.KeyField("customer")); err != nil {
		t.Fatalf("same declaration twice: %v", err)
	}
	bad := []struct {
		name string
		opts []stream.Option
		err  error
	}{
		{"orders", []stream.Option{stream.KeyField("customer"), stream.Partitions(8)}, stream.ErrConflict},
		{"orders", []stream.Option{stream.KeyField("id")}, stream.ErrConflict},
		// The JSON codec names order's fields by their Go names.
		{"orders", []stream.Option{stream.KeyField("Customer"), stream.WithCodec(stream.JSON)}, stream.ErrConflict},
		{"x", []stream.Option{stream.KeyField("customer"), stream.WithCodec(stream.JSON)}, nil},
		{"bad name", []stream.Option{stream.KeyField("customer")}, nil},
		{"x", nil, nil},
		{"x", []stream.Option{stream.KeyField("nope")}, nil},
		{"x", []stream.Option{stream.KeyField("amount")}, nil},
		{"x", []stream.Option{stream.KeyFunc(func(s string) string { return s })}, nil},
		{"x", []stream.Option{stream.KeyField("id"), stream.KeyFunc(func(o order) int64 { return o.ID })}, nil},
		{"x", []stream.Option{stream.KeyField("id"), stream.Partitions(0)}, nil},
		{"x", []stream.Option{stream.KeyField("id"), stream.Size(-1)}, nil},
	}
	for _, tc := range bad {
		_, err := stream.Declare[order](cat, tc.name, tc.opts...)
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
		if _, err := stream.Declare[tagged](cat, "t-"+f, stream.KeyField(f)); err != nil {
			t.Errorf("KeyField(%q): %v", f, err)
		}
	}
}

func TestRegistryRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	cat, c := newCatalog(t, stream.Defaults{})
	s, err := stream.Declare[order](cat, "orders", stream.KeyField("customer"), stream.Partitions(8), stream.Size(1234),
		stream.WithCodec(stream.Compressed(stream.MsgPack, stream.Zstd)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.LoadDefinition(ctx, c, cat.Keys().Registry(), "orders"); !errors.Is(err, stream.ErrUnknownStream) {
		t.Fatalf("before registration: %v, want ErrUnknownStream", err)
	}
	if err := cat.Register(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := stream.LoadDefinition(ctx, c, cat.Keys().Registry(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got != s.Definition() || got.Codec != "msgpack+zstd" || got.Partitions != 8 || got.Size != 1234 {
		t.Fatalf("registry holds %+v, declared %+v", got, s.Definition())
	}
	all, err := stream.ListDefinitions(ctx, c, cat.Keys().Registry())
	if err != nil || len(all) != 1 {
		t.Fatalf("ListDefinitions = %v, %v", all, err)
	}

	// Another process opens the stream from the registry and sends JSON; the
	// typed stream decodes what it wrote, on the same partition.
	other := stream.NewCatalog(c, cat.Keys(), stream.Defaults{}, nil)
	raw, err := stream.Open(other, got)
	if err != nil {
		t.Fatal(err)
	}
	e, err := raw.EncodeJSON([]byte(`{"id": 9007199254740993, "customer": "c7", "amount": 2.5}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := raw.SendEntries(ctx, []stream.Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	want := order{ID: 9007199254740993, Customer: "c7", Amount: 2.5}
	p, _ := s.Partition(want)
	msgs, err := c.XRange(ctx, s.Core().PartitionKey(p), ids[0], ids[0]).Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("entry not on partition %d: %v %v", p, msgs, err)
	}
	pe, _ := stream.ParseEntry(msgs[0].ID, p, msgs[0].Values)
	if o, err := s.Decode(&pe); err != nil || o != want {
		t.Fatalf("decoded %+v, %v; want %+v", o, err, want)
	}

	// Routing may not change under an existing registration.
	conflicting := stream.NewCatalog(c, cat.Keys(), stream.Defaults{}, nil)
	if _, err := stream.Declare[order](conflicting, "orders", stream.KeyField("customer"), stream.Partitions(4)); err != nil {
		t.Fatal(err)
	}
	if err := conflicting.Register(ctx); !errors.Is(err, stream.ErrConflict) {
		t.Fatalf("Register with other partitions = %v, want ErrConflict", err)
	}
	// Size and codec may change.
	resized := stream.NewCatalog(c, cat.Keys(), stream.Defaults{}, nil)
	if _, err := stream.Declare[order](resized, "orders", stream.KeyField("customer"), stream.Partitions(8), stream.Size(10)); err != nil {
		t.Fatal(err)
	}
	if err := resized.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := stream.LoadDefinition(ctx, c, cat.Keys().Registry(), "orders"); d.Size != 10 {
		t.Fatalf("size not updated: %+v", d)
	}
}

func TestEncodeJSONErrors(t *testing.T) {
	t.Parallel()
	cat, _ := newCatalog(t, stream.Defaults{})
	raw, err := stream.Open(cat, stream.Definition{Name: "x", Partitions: 4, KeyField: "k", Size: 10, Codec: "msgpack"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{``, `{`, `[1]`, `null`, `{"a":1}`, `{"k":1.5}`, `{"k":null}`, `{"k":1} {"k":2}`} {
		if _, err := raw.EncodeJSON([]byte(in), nil); err == nil {
			t.Errorf("EncodeJSON(%q) succeeded", in)
		}
	}
	if _, err := stream.Open(cat, stream.Definition{Name: "y", Partitions: 4, Size: 10, Codec: "msgpack"}); err == nil {
		t.Error("Open without a key field succeeded")
	}
	if _, err := stream.Open(cat, stream.Definition{Name: "z", Partitions: 4, KeyField: "k", Size: 10, Codec: "avro"}); err == nil {
		t.Error("Open with an unknown codec succeeded")
	}
}
