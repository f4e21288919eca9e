package stream_test

import (
	"fmt"

	"github.com/leatdev/leat/internal/keys"
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
// partition count and the codec. An *app.App is the usual host.
func ExampleDeclare() {
	cat := stream.NewCatalog(nil, keys.New("", "shop"), stream.Defaults{}, nil)
	payments, err := stream.Declare[Payment](cat, "payments",
		stream.KeyField("customer"),
		stream.Partitions(8),
		stream.WithCodec(stream.Compressed(stream.MsgPack, stream.Zstd)))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := payments.Partition(Payment{Customer: "c-7"})
	fmt.Printf("%+v\n", payments.Definition())
	fmt.Println("c-7 goes to", payments.Core().PartitionKey(p))
	// Output:
	// {Name:payments Partitions:8 KeyField:customer Size:50000 Codec:msgpack+zstd}
	// c-7 goes to leat:s:{shop:payments:6}
}
