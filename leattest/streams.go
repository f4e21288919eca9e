package leattest

import (
	"context"
	"strconv"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/stream"
)

// Stream returns the stream called name that a declares, with records of
// type T (stream.Lookup), failing the test if there is none.
func Stream[T any](k *Kit, a *app.App, name string) *stream.Stream[T] {
	k.t.Helper()
	s, err := stream.Lookup[T](a, name)
	if err != nil {
		k.t.Fatalf("leattest: %v", err)
	}
	return s
}

// Send sends records to s and returns their entry IDs, failing the test on
// an error.
func Send[T any](k *Kit, s *stream.Stream[T], records ...T) []string {
	k.t.Helper()
	ids, err := s.SendMany(context.Background(), records)
	if err != nil {
		k.t.Fatalf("leattest: send to %s: %v", s.Name(), err)
	}
	return ids
}

// Event is an entry of a stream as the kit reads it back.
type Event[T any] struct {
	Record    T
	ID        string
	Partition int
	Key       string
	Headers   stream.Headers
}

// Records returns every entry of s, decoded, partition after partition and
// in order within each: what was sent to it, by the test or by processors.
func Records[T any](k *Kit, s *stream.Stream[T]) []Event[T] {
	k.t.Helper()
	c, ok := core.StreamCore(s)
	if !ok {
		k.t.Fatalf("leattest: %T is not a stream", s)
	}
	ctx := context.Background()
	// Entries of the stream's entry codec carry no codec field: learn it
	// from the registry, as a worker does when it starts.
	if err := c.Register(ctx); err != nil {
		k.t.Fatalf("leattest: register %s: %v", s.Name(), err)
	}
	var out []Event[T]
	for p := range c.Partitions() {
		msgs, err := rdb.ReadStream(ctx, k.client, c.PartitionKey(p))
		if err != nil {
			k.t.Fatalf("leattest: read %s partition %d: %v", s.Name(), p, err)
		}
		for _, m := range msgs {
			e, err := core.ParseEntry(m.ID, p, c.EntryCodec(), m.Values)
			if err != nil {
				k.t.Fatalf("leattest: %s entry %s: %v", s.Name(), m.ID, err)
			}
			var v T
			if err := decode(c, &e, &v); err != nil {
				k.t.Fatalf("leattest: %s entry %s: %v", s.Name(), m.ID, err)
			}
			out = append(out, Event[T]{Record: v, ID: e.ID, Partition: p, Key: string(e.Key), Headers: stream.Headers(e.Headers)})
		}
	}
	return out
}

func decode(c *core.Core, e *core.Entry, v any) error {
	codec, err := c.Decoder(e.Codec)
	if err != nil {
		return err
	}
	return codec.Unmarshal(e.Data, v)
}

// DeadLetter is an entry the DeadLetter policy wrote for a processor.
type DeadLetter[T any] struct {
	Record     T
	ID         string // of the original entry
	Partition  int
	Error      string
	Deliveries int64
}

// DeadLetters returns what processor wrote to its dead-letter stream for
// the entries of s, in order.
func DeadLetters[T any](k *Kit, a *app.App, s *stream.Stream[T], processor string) []DeadLetter[T] {
	k.t.Helper()
	c, _ := core.StreamCore(s)
	msgs, err := rdb.ReadStream(context.Background(), k.client, keysOf(a).DeadLetter(s.Name(), processor))
	if err != nil {
		k.t.Fatalf("leattest: read the dead letters of %s: %v", processor, err)
	}
	out := make([]DeadLetter[T], 0, len(msgs))
	for _, m := range msgs {
		str := func(f string) string { v, _ := m.Values[f].(string); return v }
		d := DeadLetter[T]{ID: str(executor.DeadID), Error: str(executor.DeadError)}
		d.Partition, _ = strconv.Atoi(str(executor.DeadPartition))
		d.Deliveries, _ = strconv.ParseInt(str(executor.DeadDeliveries), 10, 64)
		if str(core.FieldCodec) != "" {
			e, err := core.ParseEntry(d.ID, d.Partition, "", m.Values)
			if err == nil {
				err = decode(c, &e, &d.Record)
			}
			if err != nil {
				k.t.Fatalf("leattest: dead letter %s: %v", m.ID, err)
			}
		}
		out = append(out, d)
	}
	return out
}
