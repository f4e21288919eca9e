package bench

import (
	"fmt"
	"strings"
)

// customers is the number of distinct partition keys of the records.
const customers = 1000

// record is the record type of the benchmark streams: a small order.
type record struct {
	ID       int64   `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
	Note     string  `msgpack:"note"`
}

// records returns n records keyed by 1,000 customers in turn, each with a
// note of payload bytes.
func records(n, payload int) []record {
	names := make([]string, customers)
	for i := range names {
		names[i] = fmt.Sprintf("customer-%d", i)
	}
	note := strings.Repeat("x", payload)
	recs := make([]record, n)
	for i := range recs {
		recs[i] = record{ID: int64(i), Customer: names[i%customers], Amount: float64(i) / 4, Note: note}
	}
	return recs
}
