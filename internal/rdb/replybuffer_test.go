package rdb_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// A ReplyBuffer holds what go-redis reads of a raw reply, byte for byte as
// its own raw read; one sized for the reply does not grow, and one too
// small grows to hold it all.
func TestReplyBuffer(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	key := prefix + ":s"
	for i := range 100 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"key", fmt.Sprint("k", i), "data", bytes.Repeat([]byte{byte(i)}, 100+i)}})
	}
	want := c.DoRaw(ctx, "XRANGE", key, "-", "+").Val()
	for _, size := range []int{0, 10, len(want)} {
		buf := rdb.NewReplyBuffer(size)
		if err := c.Process(ctx, redis.NewRawWriteToCmd(ctx, buf, "XRANGE", key, "-", "+")); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) || buf.Len() != len(want) {
			t.Fatalf("size %d: read %d bytes, want %d", size, buf.Len(), len(want))
		}
		if size == len(want) && buf.Cap() != size {
			t.Errorf("a buffer sized for the reply grew from %d to %d", size, buf.Cap())
		}
		buf.Reset()
		if buf.Len() != 0 || buf.Cap() < len(want) {
			t.Errorf("reset: length %d, room %d", buf.Len(), buf.Cap())
		}
	}
}
