package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
)

// FuzzEntryFields checks that the field list an entry is written as
// (appendFields, what XADD sends) for a stream of any entry codec parses
// back to the same entry, headers included, and that a field list with a
// required field lost fails with ErrMalformedEntry, never a panic.
func FuzzEntryFields(f *testing.F) {
	f.Add([]byte("c-1"), "msgpack", "msgpack", []byte{0x82, 0xa2, 'i', 'd', 0x07}, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", "")
	f.Add([]byte(""), "json+zstd", "msgpack", []byte(`{"id":1}`), "", "", "", "")
	f.Add([]byte("\xff\x00"), "msgpack+gzip", "", []byte{0x1f, 0x8b}, "h:x", "v", "key", "dup")
	f.Fuzz(func(t *testing.T, key []byte, codec, entryCodec string, data []byte, h1, v1, h2, v2 string) {
		in := Entry{ID: "1-1", Partition: 3, Key: key, Codec: codec, Data: data}
		if h1 != "" || h2 != "" {
			in.Headers = Headers{h1: v1, h2: v2}
		}
		// Redis returns every field and value as bytes, which the raw
		// reply reader hands over as they are: do the same.
		fields := in.appendFields(nil, entryCodec)
		flat := make([][]byte, len(fields))
		for i, v := range fields {
			switch x := v.(type) {
			case []byte:
				flat[i] = x
			case string:
				flat[i] = []byte(x)
			default:
				t.Fatalf("field %d of %+v is a %T", i, in, v)
			}
		}
		if hasCodec := slices.ContainsFunc(fields, func(v any) bool { return v == any(FieldCodec) }); hasCodec != (codec != entryCodec || entryCodec == "") {
			t.Fatalf("codec field written: %v, for codec %q of a stream of entry codec %q", hasCodec, codec, entryCodec)
		}
		out, err := ParseFieldBytes(in.ID, in.Partition, entryCodec, flat)
		if err != nil {
			t.Fatalf("ParseFieldBytes of written %+v: %v", in, err)
		}
		if !bytes.Equal(out.Key, in.Key) || out.Codec != in.Codec || !bytes.Equal(out.Data, in.Data) ||
			!maps.Equal(out.Headers, in.Headers) || out.ID != in.ID || out.Partition != in.Partition {
			t.Fatalf("round trip\n got %+v\nwant %+v", out, in)
		}

		// Drop one field: the parser fails cleanly when it was required.
		for drop := 0; drop < len(flat); drop += 2 {
			cut := append(append([][]byte(nil), flat[:drop]...), flat[drop+2:]...)
			_, err := ParseFieldBytes(in.ID, in.Partition, entryCodec, cut)
			name := string(flat[drop])
			if required := name == FieldCodec && entryCodec == "" || name == FieldData; required && !errors.Is(err, ErrMalformedEntry) {
				t.Fatalf("without %q: %v, want ErrMalformedEntry", name, err)
			}
		}
		// An odd list (a truncated reply) never reads past its end.
		_, _ = ParseFieldBytes(in.ID, in.Partition, entryCodec, flat[:len(flat)-1])
	})
}

// FuzzDecompress checks both compressors: what Compress returns
// decompresses to the input, and any other bytes decompress or fail with an
// error, within the size bound.
func FuzzDecompress(f *testing.F) {
	for _, z := range []Compressor{Gzip, Zstd} {
		b, err := z.Compress([]byte(`{"id":7,"customer":"c-1"}`))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(z.Name(), b)
		f.Add(z.Name(), b[:len(b)/2])
	}
	f.Add("gzip", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add("zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x60, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		z, err := LookupCompressor(name)
		if err != nil {
			return
		}
		if out, err := z.Decompress(data); err == nil && len(out) > maxDecompressed {
			t.Fatalf("%s: decompressed %d bytes, over the bound", name, len(out))
		}
		c, err := z.Compress(data)
		if err != nil {
			t.Fatalf("%s: compress: %v", name, err)
		}
		back, err := z.Decompress(c)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("%s: round trip of %q: %q, %v", name, data, back, err)
		}
	})
}

// FuzzParseDefinition checks registry entries: what a declaration writes
// reads back the same, and an entry ParseDefinition accepts is one a
// declaration could have written (Open then routes by it without a
// division by zero or a partition out of range).
func FuzzParseDefinition(f *testing.F) {
	for _, d := range []Definition{
		{Name: "orders", Partitions: 16, KeyField: "customer", Size: 100_000, Codec: "msgpack"},
		{Name: "clicks", Partitions: 1, Size: 1, Codec: "json+zstd", WhenFull: FullRefuse},
		{Name: "a", Partitions: 65536, KeyField: "k", Size: 1 << 40, Codec: "custom", WhenFull: FullWait},
	} {
		b, err := json.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(d.Name, b)
	}
	f.Add("orders", []byte(`{"name":"orders","partitions":0,"size":10,"codec":"msgpack"}`))
	f.Add("orders", []byte(`{"name":"payments","partitions":4,"size":10,"codec":"msgpack"}`))
	f.Add("orders", []byte(`{"name":"orders","partitions":4,"size":10,"codec":"msgpack","when_full":"drop"}`))
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		d, err := ParseDefinition(name, b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if d.Name != name || d.validate() != nil {
			t.Fatalf("accepted %q as %+v", b, d)
		}
		if p := PartitionOf(b, d.Partitions); p < 0 || p >= d.Partitions {
			t.Fatalf("partition %d of %d", p, d.Partitions)
		}
		again, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if d2, err := ParseDefinition(name, again); err != nil || d2 != d {
			t.Fatalf("round trip of %+v: %+v, %v", d, d2, err)
		}
	})
}
