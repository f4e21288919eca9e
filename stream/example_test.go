package stream_test

import (
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
