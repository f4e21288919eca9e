package inspect

import (
	"context"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Appended windows: the rate a stream's entries arrive at, counted from
// their entry IDs (the server time of each XADD), so a reader that looks
// once (a page loaded after a burst) sees what arrived in the last minute.
const (
	// AppendedBucket is the width of one bucket of an Appended.
	AppendedBucket = 5 * time.Second
	// AppendedBuckets is how many buckets an Appended has: a minute.
	AppendedBuckets = 12
	// AppendedRead is the most entries of a partition read to count them,
	// which bounds the work of one report; a partition with more in the
	// minute is counted from its newest AppendedRead entries on.
	AppendedRead = 10_000
)

// Appended is how many entries were appended to a stream in each bucket of
// the last minute, counted from the entry IDs Redis holds (entries trimmed
// by retention are not counted).
type Appended struct {
	// Time is the server time the last bucket ends at.
	Time time.Time `json:"time"`
	// BucketMS is the width of a bucket, in ms.
	BucketMS int64 `json:"bucket_ms"`
	// Counts are the entries appended in each bucket, oldest first; null
	// for a bucket older than the entries read of a partition that holds
	// more than AppendedRead entries in the minute (not counted).
	Counts []*int64 `json:"counts"`
	// PerSecond is the rate over the last 10 seconds (or over the span of
	// the entries read, when a partition holds more than AppendedRead
	// entries in it).
	PerSecond float64 `json:"per_second"`
}

// Appended counts the entries appended to stream, of partitions
// partitions, over the last minute (one script per 64 partitions, one
// per partition on Cluster, in one round trip).
func (i *Inspector) Appended(ctx context.Context, stream string, partitions int) (Appended, error) {
	keys := make([]string, partitions)
	for p := range keys {
		keys[p] = i.k.Partition(stream, p)
	}
	return appendedOf(ctx, i, keys, AppendedRead)
}

func appendedOf(ctx context.Context, i *Inspector, keys []string, limit int) (Appended, error) {
	now, parts, err := rdb.Appended(ctx, i.c, keys, AppendedBucket, AppendedBuckets, limit)
	if err != nil {
		return Appended{}, err
	}
	width := AppendedBucket.Milliseconds()
	start := now.UnixMilli() - AppendedBuckets*width
	a := Appended{Time: now, BucketMS: width, Counts: make([]*int64, AppendedBuckets)}
	sums := make([]int64, AppendedBuckets)
	known := make([]bool, AppendedBuckets)
	for b := range known {
		known[b] = true
	}
	// The rate: over the last 10 s, or over the span a capped partition's
	// entries cover when that is shorter.
	span := 2 * width
	for _, p := range parts {
		for b, n := range p.Counts {
			sums[b] += n
			// A capped partition's counts are whole from the bucket after
			// its oldest entry read on.
			if p.Capped && start+int64(b)*width <= p.Oldest {
				known[b] = false
			}
		}
		if p.Capped {
			span = min(span, max(now.UnixMilli()-p.Oldest, 1))
		}
	}
	for b := range sums {
		if known[b] {
			n := sums[b]
			a.Counts[b] = &n
		}
	}
	if span == 2*width {
		a.PerSecond = float64(sums[AppendedBuckets-1]+sums[AppendedBuckets-2]) / (float64(span) / 1000)
		return a, nil
	}
	// Capped: count every partition's entries in the span the capped ones
	// cover, from the buckets (the span's first bucket in proportion).
	from := now.UnixMilli() - span
	var n float64
	for b, s := range sums {
		lo, hi := start+int64(b)*width, start+int64(b+1)*width
		switch {
		case lo >= from:
			n += float64(s)
		case hi > from:
			n += float64(s) * float64(hi-from) / float64(width)
		}
	}
	a.PerSecond = n / (float64(span) / 1000)
	return a, nil
}

// FinishedBuckets is how many 10-second buckets of finished-task counters
// a Finished holds: the last minute.
const FinishedBuckets = 6

// Finished is how many tasks of a queue reached a final state (succeeded,
// failed, dead, cancelled) in each 10-second bucket of the last minute,
// from the counters the scripts that end tasks keep.
type Finished struct {
	// Time is the server time; the last bucket, begun, ends there.
	Time time.Time `json:"time"`
	// BucketMS is the width of a bucket, in ms.
	BucketMS int64 `json:"bucket_ms"`
	// Counts are the tasks finished in each bucket, oldest first.
	Counts []int64 `json:"counts"`
	// PerSecond is the rate over the buckets' span (50 to 60 seconds).
	PerSecond float64 `json:"per_second"`
}

// Finished reads the finished-task counters of queues over the last
// minute (one MGET per queue, in one round trip after a TIME).
func (i *Inspector) Finished(ctx context.Context, queues []string) ([]Finished, error) {
	prefixes := make([]string, len(queues))
	for j, q := range queues {
		prefixes[j] = i.k.TaskFinishedPrefix(q)
	}
	now, counts, err := rdb.FinishedSeries(ctx, i.c, prefixes, FinishedBuckets)
	if err != nil {
		return nil, err
	}
	width := int64(rdb.FinishedBucket / time.Second)
	start := time.Unix((now.Unix()/width-(FinishedBuckets-1))*width, 0)
	span := now.Sub(start).Seconds()
	out := make([]Finished, len(queues))
	for j, cs := range counts {
		var sum int64
		for _, n := range cs {
			sum += n
		}
		out[j] = Finished{Time: now, BucketMS: rdb.FinishedBucket.Milliseconds(), Counts: cs}
		if span > 0 {
			out[j].PerSecond = float64(sum) / span
		}
	}
	return out, nil
}
