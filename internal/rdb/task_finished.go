// Finished-task counters: the per-bucket counts of ended tasks that the
// scripts keep and the throughput readers (inspect) sum over a window.

package rdb

import (
	"strconv"
	"time"
)

// Finished-task counters (KeySpace.TaskFinishedPrefix): every script that
// ends tasks adds them to the counter of the current bucket, one INCRBY and
// one PEXPIRE per call. common.lua holds the same values.
const (
	// FinishedBucket is the width of one counter's bucket.
	FinishedBucket = 10 * time.Second
	// FinishedKeep is how long a counter is kept after its last increment:
	// the longest throughput window read (5 minutes), its bucket being
	// filled, and a margin.
	FinishedKeep = 330 * time.Second
)

// FinishedKeys returns the keys of the finished-task counters (prefix:
// KeySpace.TaskFinishedPrefix) covering the window ending at now: the
// current bucket and the whole buckets before it, as many as fit in
// window. The counts of those keys are the tasks finished from start to
// now, a span between window - FinishedBucket and window long.
func FinishedKeys(prefix string, now time.Time, window time.Duration) (ks []string, start time.Time) {
	width := int64(FinishedBucket / time.Second)
	cur := now.Unix() / width
	n := int64(window / FinishedBucket) // whole buckets before the current one
	if n > 0 && now.Sub(time.Unix(cur*width, 0)) > 0 {
		n-- // the current bucket has begun: the span stays within window
	}
	for b := cur - n; b <= cur; b++ {
		ks = append(ks, prefix+strconv.FormatInt(b, 10))
	}
	return ks, time.Unix((cur-n)*width, 0)
}
