package rdb

import (
	"reflect"
	"testing"
)

// A change log entry's changes decode to what was encoded; a truncated or
// unknown one is an error, never a panic.
func TestChangesRoundTrip(t *testing.T) {
	in := []Change{
		{Key: "c-1", Value: []byte("\x81\xa4name\xa3Ada")},
		{Key: "c-2", Delete: true},
		{Key: "", Value: []byte{}},
		{Key: "long", Value: make([]byte, 300)},
	}
	b := EncodeChanges(in)
	out, err := DecodeChanges(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d changes, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i].Key != in[i].Key || out[i].Delete != in[i].Delete || len(out[i].Value) != len(in[i].Value) ||
			(len(in[i].Value) > 0 && !reflect.DeepEqual(out[i].Value, in[i].Value)) {
			t.Errorf("change %d: %+v, want %+v", i, out[i], in[i])
		}
	}
	for n := 1; n < len(b); n++ {
		if _, err := DecodeChanges(b[:n]); err == nil && n != len(EncodeChanges(in[:1])) && n != len(EncodeChanges(in[:2])) && n != len(EncodeChanges(in[:3])) {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	if _, err := DecodeChanges([]byte("x\x00")); err == nil {
		t.Error("an unknown operation decoded")
	}
}
