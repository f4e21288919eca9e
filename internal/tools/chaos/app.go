package chaos

import (
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// AppName is the name of the app the runner's workers and producer share.
const AppName = "chaos"

// Settings of the run's processors and queue: short expiries, so that a
// fault's effect (a partition or a task moving to another worker) shows
// within seconds.
const (
	Partitions  = 8
	LockExpiry  = 3 * time.Second
	Visibility  = 5 * time.Second
	LeaderLease = 3 * time.Second
)

// Event is a record of the runner's stream: the Seq-th record sent with
// Key (Seq counts from 1 per key).
type Event struct {
	Key string `msgpack:"key"`
	Seq int64  `msgpack:"seq"`
}

// Chore is the payload of the runner's tasks: the N-th task enqueued.
type Chore struct {
	N int64 `msgpack:"n" json:"n"`
}

// Done is a task's result.
type Done struct {
	N int64 `msgpack:"n" json:"n"`
}

// Config returns the app configuration of a worker or the producer
// connecting to url with key prefix prefix.
func Config(url, prefix, workerID string) app.Config {
	return app.Config{
		Name:        AppName,
		RedisURL:    url,
		KeyPrefix:   prefix,
		WorkerID:    workerID,
		LeaderLease: LeaderLease,
		Processing: executor.Options{
			LockExpiry: LockExpiry,
			ReadBlock:  500 * time.Millisecond,
			Grace:      2 * time.Second,
		},
	}
}

// DeclareStream declares the runner's stream on a.
func DeclareStream(a *app.App) (*stream.Stream[Event], error) {
	return stream.Declare[Event](a, "events", stream.KeyField("key"), stream.Partitions(Partitions))
}

// QueueOptions are the options of the runner's task queue: a task of a
// killed or stalled worker is handed out again after Visibility; a task
// that failed because Redis was away is retried soon.
func QueueOptions() []task.Option {
	return []task.Option{
		task.Concurrency(4),
		task.Visibility(Visibility),
		task.Timeout(10 * time.Second),
		task.MaxRetries(1000),
		task.Backoff(100*time.Millisecond, time.Second),
		task.Retention(24 * time.Hour),
		task.Grace(2 * time.Second),
	}
}

// QueueName is the name of the runner's task queue.
const QueueName = "chores"

// Tally is the value the runner's second processor, "tally", keeps per key
// in a table: each event it processes updates its key's tally in the same
// step as its acknowledgement. Last is the highest sequence number applied
// and Entry the ID of the last entry applied; Applied counts the entries
// applied. Again counts entries applied a second time (an entry at or
// before Entry: the table's exactly-once promise broken) and Gaps sequence
// numbers skipped (an event acknowledged without its write applied). A
// sequence number at or below Last in a newer entry is a resent copy of an
// event (Resent), which the producer may add.
type Tally struct {
	Last    int64  `msgpack:"last"`
	Entry   string `msgpack:"entry"`
	Applied int64  `msgpack:"applied"`
	Resent  int64  `msgpack:"resent"`
	Again   int64  `msgpack:"again"`
	Gaps    int64  `msgpack:"gaps"`
}

// TallyProcessor is the name of the processor keeping the tallies.
const TallyProcessor = "tally"

// DeclareTally declares the tally table on s, the runner's stream.
func DeclareTally(s *stream.Stream[Event]) (*stream.Table[Tally], error) {
	return stream.DeclareTable[Tally](s, TallyProcessor, "tally")
}

// Apply returns t updated with the event seq of entry id.
func (t Tally) Apply(id string, seq int64) Tally {
	switch {
	case t.Entry != "" && stream.CompareIDs(id, t.Entry) <= 0:
		t.Again++
	case seq <= t.Last:
		t.Resent++
	case seq > t.Last+1:
		t.Gaps += seq - t.Last - 1
	}
	t.Last = max(t.Last, seq)
	t.Entry = id
	t.Applied++
	return t
}
