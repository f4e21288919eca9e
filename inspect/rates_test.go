package inspect_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// known sums the buckets of a counted, and says how many are unknown.
func known(a inspect.Appended) (sum int64, unknown int) {
	for _, c := range a.Counts {
		if c == nil {
			unknown++
			continue
		}
		sum += *c
	}
	return sum, unknown
}

// A burst of entries is counted from their IDs whole, in the buckets that
// end at the server's time; a partition holding more than the entries read
// leaves the buckets before them unknown, and the rate comes from the span
// they cover.
func TestAppendedCounts(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k := rdb.NewKeySpace(prefix, "shop")
	for p, n := range []int{1200, 800, 0} {
		pipe := c.Pipeline()
		for i := range n {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: k.Partition("clicks", p), Values: []any{"key", fmt.Sprint(i), "data", "x"}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	in := inspect.New(c, prefix, "shop")
	a, err := in.Appended(ctx, "clicks", 3)
	if err != nil {
		t.Fatal(err)
	}
	sum, unknown := known(a)
	if sum != 2000 || unknown != 0 || len(a.Counts) != inspect.AppendedBuckets || a.BucketMS != inspect.AppendedBucket.Milliseconds() {
		t.Fatalf("counted %d entries (%d buckets unknown) in %+v, want the 2,000 appended", sum, unknown, a)
	}
	last10 := *a.Counts[len(a.Counts)-1] + *a.Counts[len(a.Counts)-2]
	if a.PerSecond <= 0 || a.PerSecond != float64(last10)/10 {
		t.Fatalf("%v per second, want the last 10 s's %d entries over 10 s", a.PerSecond, last10)
	}

	// Reading at most 500 entries of a partition: partition 0's newest 500
	// are counted; the rate covers their span.
	a, err = inspect.AppendedWithin(ctx, in, "clicks", 3, 500)
	if err != nil {
		t.Fatal(err)
	}
	sum, unknown = known(a)
	if unknown == 0 && sum > 1000 {
		t.Fatalf("capped reads counted %d entries with every bucket known: %+v", sum, a)
	}
	if a.PerSecond <= 0 {
		t.Fatalf("capped reads: %v per second", a.PerSecond)
	}

	// A stream without entries, and partitions that do not exist.
	a, err = in.Appended(ctx, "nothing", 2)
	if err != nil {
		t.Fatal(err)
	}
	if sum, unknown := known(a); sum != 0 || unknown != 0 || a.PerSecond != 0 {
		t.Fatalf("an empty stream: %+v", a)
	}
}
