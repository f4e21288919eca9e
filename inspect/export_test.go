package inspect

import (
	"context"
	"time"
)

// SetTaskWorkerAlive sets how recently i must see a task worker read or
// claim to count it alive (TaskWorkerAlive).
func SetTaskWorkerAlive(i *Inspector, d time.Duration) { i.alive = d }

// AppendedWithin is Appended reading at most limit entries of each
// partition (AppendedRead).
func AppendedWithin(ctx context.Context, i *Inspector, stream string, partitions, limit int) (Appended, error) {
	keys := make([]string, partitions)
	for p := range keys {
		keys[p] = i.k.Partition(stream, p)
	}
	return appendedOf(ctx, i, keys, limit)
}
