package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Dead consumers. Every executor is a consumer of its processor's group on
// the partitions it reads, under its own ID, fresh on each run, so each
// deploy would add a consumer to every group for good. A consumer is
// deleted once it has nothing pending, by a script that checks and deletes
// in one step, so no pending entry is ever lost with it:
//
//   - an executor deletes its own consumer on a partition it releases, after
//     acknowledging (entries it fetched but never handed out stay pending
//     there until the next owner claims them);
//   - CleanConsumers, run by the app's leader every minute for every
//     processor of the registry, deletes the consumers of executors that
//     are not live members (crashed, or left with entries pending that the
//     next owner claimed since).

// cleanBatch is how many partitions one pipelined round trip covers.
const cleanBatch = 1000

// CleanConsumers deletes, on every partition of the stream called stream
// (of the given number of partitions, in the key space of an app), the
// consumers of processor's group whose executor is not a live member of
// the processor and that have nothing pending; the stream need not be one
// this program declares (its partition count comes from the registry). It
// returns how many it deleted. Its cost is two pipelined commands per
// partition.
func CleanConsumers(ctx context.Context, client redis.UniversalClient, space rdb.KeySpace, stream string, partitions int, processor string) (int, error) {
	live, err := rdb.Alive(ctx, client, space.Members(stream, processor))
	if err != nil {
		return 0, fmt.Errorf("processor %q: live members: %w", processor, err)
	}
	deleted := 0
	for from := 0; from < partitions; from += cleanBatch {
		n, err := cleanPartitions(ctx, client, space, stream, processor, live, from, min(from+cleanBatch, partitions))
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("processor %q: clean consumers: %w", processor, err)
		}
	}
	return deleted, nil
}

// cleanPartitions cleans partitions [from, to) in two round trips: list the
// consumers, then delete the dead ones without pending entries.
func cleanPartitions(ctx context.Context, client redis.UniversalClient, space rdb.KeySpace, stream string,
	processor string, live []string, from, to int) (int, error) {
	keys := make([]string, 0, to-from)
	for p := from; p < to; p++ {
		keys = append(keys, space.Partition(stream, p))
	}
	consumers, errs := rdb.Consumers(ctx, client, keys, processor)
	dead := map[string][]string{}
	for i, cs := range consumers {
		if err := errs[i]; err != nil {
			if rdb.IsNoGroup(err) || rdb.IsNoKey(err) {
				continue // a missing group is no error
			}
			return 0, err
		}
		for _, c := range cs {
			if c.Pending == 0 && !slices.Contains(live, c.Name) {
				dead[keys[i]] = append(dead[keys[i]], c.Name)
			}
		}
	}
	return rdb.DeleteConsumers(ctx, client, processor, dead)
}
