package core_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/core"
)

// BenchmarkEncodeAll encodes a chunk of SendMany (10,000 records of about
// 100 bytes) without Redis: the encoding part of a send's client CPU.
//
//	go test -run '^$' -bench EncodeAll ./internal/core
func BenchmarkEncodeAll(b *testing.B) {
	s, err := core.Declare[order](newCatalog(b), "orders", core.Spec{Partitions: 16, KeyField: "customer", Codec: core.MsgPack})
	if err != nil {
		b.Fatal(err)
	}
	in := make([]order, 10000)
	for i := range in {
		in[i] = order{ID: int64(i), Customer: "customer-" + strconv.Itoa(i%1000), Amount: 12.5, Note: strings.Repeat("x", 64)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.EncodeAll(len(in), func(i int) (*order, core.Headers) { return &in[i], nil }); err != nil {
			b.Fatal(err)
		}
	}
}
