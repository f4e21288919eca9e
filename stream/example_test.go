package stream_test

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
)

// Routing is xxhash64 of the key's bytes mod the partition count; integers
// hash as their decimal digits, so any language can route the same way.
func ExamplePartitionOf() {
	k, _ := stream.KeyBytes(42)
	fmt.Println(string(k), stream.PartitionOf(k, 16))
	fmt.Println(stream.PartitionOf([]byte("customer-42"), 16))
	// Output:
	// 42 9
	// 15
}

type Payment struct {
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
}

// Declaring a stream does no I/O: it fixes the record type, the key, the
// partition count and the codec.
func ExampleDeclare() {
	a, err := app.New(app.Config{Name: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	payments, err := stream.Declare[Payment](a, "payments",
		stream.KeyField("customer"),
		stream.Partitions(8),
		stream.WithCodec(stream.Compressed(stream.MsgPack, stream.Zstd)))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := payments.Partition(Payment{Customer: "c-7"})
	fmt.Printf("%+v\n", payments.Definition())
	fmt.Println("c-7 goes to partition", p)
	// Output:
	// {Name:payments Partitions:8 KeyField:customer Size:50000 Codec:msgpack+zstd EntryCodec: WhenFull:}
	// c-7 goes to partition 6
}

// A table keeps a value per key for one processor; the writes of a loop body
// are applied with the acknowledgement of its event, exactly once.
func ExampleDeclareTable() {
	a, err := app.New(app.Config{Name: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	payments, err := stream.Declare[Payment](a, "payments", stream.KeyField("customer"))
	if err != nil {
		fmt.Println(err)
		return
	}
	totals, err := stream.DeclareTable[float64](payments, "totals", "by-customer")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = app.Process(a, payments, "totals", func(ctx context.Context, events *stream.Events[Payment]) error {
		st := totals.In(events)
		for e := range events.All() {
			sum, _, err := st.Get(ctx, e.Record.Customer)
			if err != nil {
				return err
			}
			if err := st.Set(e.Record.Customer, sum+e.Record.Amount); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// a.Run(ctx) runs the processor; totals.Get(ctx, "c-7") reads a total
	// from anywhere.
	fmt.Println(totals.Name())
	// Output: by-customer
}

// Entry IDs compare as numbers, part by part.
func ExampleCompareIDs() {
	fmt.Println(stream.CompareIDs("1700000000000-9", "1700000000000-10"))
	fmt.Println(stream.CompareIDs("10-0", "9-99"))
	// Output:
	// -1
	// 1
}
