package core_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/core"
)

func allCodecs() []core.Codec {
	var out []core.Codec
	for _, c := range []core.Codec{core.MsgPack, core.JSON} {
		out = append(out, c, core.Compressed(c, core.Gzip), core.Compressed(c, core.Zstd))
	}
	return out
}

func TestCodecsRoundTrip(t *testing.T) {
	in := order{ID: 1<<53 + 1, Customer: "ü-42", Amount: 12.5, Note: strings.Repeat("x", 300)}
	for _, c := range allCodecs() {
		t.Run(c.Name(), func(t *testing.T) {
			b, err := c.Marshal(&in)
			if err != nil {
				t.Fatal(err)
			}
			var out order
			if err := c.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if out != in {
				t.Fatalf("round trip: got %+v, want %+v", out, in)
			}
			// The codec is found again by the name written on the entry.
			c2, err := core.LookupCodec(c.Name())
			if err != nil {
				t.Fatal(err)
			}
			var out2 order
			if err := c2.Unmarshal(b, &out2); err != nil || out2 != in {
				t.Fatalf("lookup %q: got %+v, %v", c.Name(), out2, err)
			}
		})
	}
}

func TestCompressionShrinks(t *testing.T) {
	in := order{Note: strings.Repeat("abc", 1000)}
	plain, _ := core.MsgPack.Marshal(&in)
	for _, z := range []core.Compressor{core.Gzip, core.Zstd} {
		b, err := core.Compressed(core.MsgPack, z).Marshal(&in)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) >= len(plain)/4 {
			t.Fatalf("%s: %d bytes compressed, %d plain", z.Name(), len(b), len(plain))
		}
	}
}

func TestLookupCodecUnknown(t *testing.T) {
	for _, name := range []string{"", "avro", "msgpack+brotli", "json+"} {
		if _, err := core.LookupCodec(name); err == nil {
			t.Fatalf("LookupCodec(%q) succeeded", name)
		}
	}
}

func TestCodecRejectsTrailingData(t *testing.T) {
	b, _ := core.MsgPack.Marshal(&order{ID: 1})
	var o order
	if err := core.MsgPack.Unmarshal(append(b, 0x01), &o); err == nil {
		t.Fatal("msgpack accepted trailing data")
	}
	if err := core.JSON.Unmarshal([]byte(`{"id":1} {"id":2}`), &o); err == nil {
		t.Fatal("json accepted trailing data")
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: they may fail, never
// panic, and what they accept re-encodes to an equal value.
func FuzzDecode(f *testing.F) {
	for _, c := range allCodecs() {
		b, _ := c.Marshal(&order{ID: 7, Customer: "c", Amount: 1})
		f.Add(c.Name(), b)
	}
	f.Add("json", []byte(`{"id":"x"}`))
	f.Add("msgpack+gzip", []byte{0x1f, 0x8b, 0, 0})
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		c, err := core.LookupCodec(name)
		if err != nil {
			return
		}
		var o order
		if err := c.Unmarshal(data, &o); err != nil {
			return
		}
		b, err := c.Marshal(&o)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", o, err)
		}
		var o2 order
		if err := c.Unmarshal(b, &o2); err != nil || !reflect.DeepEqual(o, o2) {
			t.Fatalf("second round trip of %+v: %+v, %v", o, o2, err)
		}
	})
}

// FuzzParseEntry checks that any field map parses or fails cleanly, and that
// the JSON record decoder never panics.
func FuzzParseEntry(f *testing.F) {
	f.Add("key", "k", "codec", "msgpack", "", []byte(`{"id":1}`))
	f.Add("key", "k", "h:x", "y", "json", []byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, f1, v1, f2, v2, entryCodec string, data []byte) {
		e, err := core.ParseEntry("1-1", 0, entryCodec, map[string]any{f1: v1, f2: v2, "data": string(data)})
		if err == nil && !bytes.Equal(e.Data, data) && f1 != "data" && f2 != "data" {
			t.Fatalf("data field lost: %q", e.Data)
		}
		// The flat field list Redis sends parses to the same entry.
		flat, err2 := core.ParseFieldBytes("1-1", 0, entryCodec, [][]byte{[]byte(f1), []byte(v1), []byte(f2), []byte(v2), []byte("data"), data})
		if (err == nil) != (err2 == nil) || (err == nil && (!bytes.Equal(flat.Data, e.Data) || flat.Codec != e.Codec)) {
			if f1 != f2 { // a map cannot hold a repeated field; a list can
				t.Fatalf("ParseEntry %+v, %v; ParseFieldBytes %+v, %v", e, err, flat, err2)
			}
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
	})
}

// EncodeAll's records, encoded one after the other into shared buffers,
// each keep their own bytes: records of every size, small ones that fill
// buffers and large ones beyond a buffer's size, decode back as sent.
func TestEncodeAllKeepsEachRecord(t *testing.T) {
	for _, c := range allCodecs() {
		if !strings.HasPrefix(c.Name(), "msgpack") {
			continue // the key field would be named by the json tag
		}
		t.Run(c.Name(), func(t *testing.T) {
			s, err := core.Declare[order](newCatalog(t), "orders-"+strings.ReplaceAll(c.Name(), "+", "-"), core.Spec{Partitions: 4, KeyField: "customer", Codec: c})
			if err != nil {
				t.Fatal(err)
			}
			in := make([]order, 3000)
			for i := range in {
				in[i] = order{ID: int64(i), Customer: "c-" + strconv.Itoa(i%7), Amount: float64(i) / 4, Note: strings.Repeat("n", i%50)}
				if i%500 == 1 {
					in[i].Note = strings.Repeat("big", 40000) // 120 KB: beyond a buffer
				}
			}
			entries, err := s.EncodeAll(len(in), func(i int) (*order, core.Headers) { return &in[i], nil })
			if err != nil {
				t.Fatal(err)
			}
			for i := range entries {
				var out order
				if err := s.DecodeInto(&entries[i], &out); err != nil || out != in[i] {
					t.Fatalf("record %d: got %+v, %v", i, out.ID, err)
				}
			}
		})
	}
}
