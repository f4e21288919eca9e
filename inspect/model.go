package inspect

import "time"

// Overview is the state of an app: what "leat inspect --json" prints.
// Field names and meanings are stable; new fields may be added.
type Overview struct {
	App        string             `json:"app"`
	Time       time.Time          `json:"time"`   // the Redis server's time when read
	Leader     *Leader            `json:"leader"` // null when no worker leads
	Streams    []StreamSummary    `json:"streams"`
	Processors []ProcessorSummary `json:"processors"`
	Workers    []Worker           `json:"workers"`
	Queues     []QueueSummary     `json:"queues"`   // task queues
	Warnings   []string           `json:"warnings"` // retention risks and quarantines, one sentence each
}

// QueueSummary is one task queue of the app, in the overview and in
// QueueReport. Every figure is read from counters and the heads of the
// queue's streams, never by a scan (see the package's Cost section).
type QueueSummary struct {
	Name        string `json:"name"`
	Keyed       bool   `json:"keyed"`
	Concurrency int    `json:"concurrency"` // per worker: as declared, or as set live
	// ConcurrencyLive says Concurrency was set live
	// (task.Queue.SetConcurrency) in place of the declared one.
	ConcurrencyLive bool             `json:"concurrency_live"`
	Counts          map[string]int64 `json:"counts"` // state -> tasks, from the queue's counters
	// OldestReadyAgeMS is the age in milliseconds of the oldest ready
	// entry no worker took yet, over the priority levels (server time
	// minus the time in its entry ID: how long it has waited since it was
	// enqueued, promoted, retried or handed back); null when none waits.
	// On a keyed queue an entry stands for a key's next task.
	OldestReadyAgeMS *int64     `json:"oldest_ready_age_ms"`
	Throughput       Throughput `json:"throughput"`
	// PausedAt is when the queue was paused (task.Queue.Pause): its
	// workers start none of its tasks until it is resumed; null when it is
	// not paused.
	PausedAt *time.Time `json:"paused_at"`
}

// Throughput is how many tasks of a queue reached a final state
// (succeeded, failed, dead, cancelled) recently, from counters that the
// scripts ending tasks keep per 10-second bucket.
type Throughput struct {
	LastMinute     Rate `json:"last_minute"`
	LastFiveMinute Rate `json:"last_5_minutes"`
}

// Rate is the tasks finished over a span ending at the report's time.
// The span starts on a 10-second bucket: it is between 50 and 60 seconds
// long for the last minute, between 290 and 300 for the last 5 minutes.
type Rate struct {
	Finished  int64   `json:"finished"`
	Seconds   float64 `json:"seconds"`    // the span counted
	PerSecond float64 `json:"per_second"` // Finished / Seconds
}

// QueueReport is the state of one task queue: what "leat inspect queue Q
// --json" prints. Field names and meanings are stable; new fields may be
// added.
type QueueReport struct {
	App  string    `json:"app"`
	Time time.Time `json:"time"` // the Redis server's time when read
	QueueSummary
	Strict bool `json:"strict"` // priority levels are strict (else weighted)
	// Rate is the queue's rate limit (task.Rate) and KeyRate its limit per
	// key (task.KeyRate), as its workers recorded them; null when none.
	// When RateLive, Rate is the one set live (task.Queue.SetRate) in place
	// of the workers' (null: the limit was lifted).
	Rate     *RateLimit `json:"rate"`
	RateLive bool       `json:"rate_live"`
	KeyRate  *RateLimit `json:"key_rate"`
	// KeyConcurrency is how many tasks of a key of a keyed queue run at
	// once (task.KeyConcurrency; 1 when not given, 0 for an unkeyed queue)
	// and MaxKeyBacklog the most tasks a key holds in line
	// (task.MaxKeyBacklog; 0: no bound), as recorded in the registry.
	KeyConcurrency int `json:"key_concurrency"`
	MaxKeyBacklog  int `json:"max_key_backlog"`
	// Delivered is the number of ready entries delivered to a worker and
	// not acknowledged, over the levels: tasks running, or taken by a worker
	// that died and not reclaimed yet.
	Delivered int64 `json:"delivered"`
	// OldestDeliveredAgeMS is the age in milliseconds of the oldest of those
	// entries (from its ID: time since it became ready, waiting and running
	// included); null when none.
	OldestDeliveredAgeMS *int64       `json:"oldest_delivered_age_ms"`
	Levels               []QueueLevel `json:"levels"`
	// Workers are the workers of the queue: those alive and those with
	// tasks delivered, by worker ID.
	Workers []TaskWorker `json:"workers"`
	// Leader is the worker ID of the queue's leader, which promotes its due
	// tasks, fires its cron schedules and reclaims the tasks of dead
	// workers: one of the workers that handle it. "" when none holds the
	// queue's lease (no worker handles the queue).
	Leader string `json:"leader"`
}

// RateLimit is at most Tasks tasks started per window of WindowMS
// milliseconds.
type RateLimit struct {
	Tasks    int   `json:"tasks"`
	WindowMS int64 `json:"window_ms"`
}

// QueueLevel is one priority level of a task queue (its ready stream).
type QueueLevel struct {
	Level                int    `json:"level"` // 0 first
	Name                 string `json:"name"`
	Weight               int    `json:"weight"`
	OldestReadyID        string `json:"oldest_ready_id,omitempty"` // "" when none waits
	OldestReadyAgeMS     *int64 `json:"oldest_ready_age_ms"`
	Delivered            int64  `json:"delivered"`
	OldestDeliveredID    string `json:"oldest_delivered_id,omitempty"`
	OldestDeliveredAgeMS *int64 `json:"oldest_delivered_age_ms"`
}

// Leader is the app's leader.
type Leader struct {
	Worker string `json:"worker"` // worker ID held by the leader lease
	Term   int64  `json:"term"`   // last leader term (the lease's fencing counter)
}

// StreamSummary is one stream of the registry.
type StreamSummary struct {
	Name       string   `json:"name"`
	Partitions int      `json:"partitions"`
	Size       int64    `json:"size"` // retention per partition (XADD MAXLEN ~)
	Codec      string   `json:"codec"`
	KeyField   string   `json:"key_field,omitempty"`
	Length     int64    `json:"length"`     // entries kept, all partitions
	Processors []string `json:"processors"` // names of its processors
}

// ProcessorSummary is one processor, its figures summed over the
// partitions of its stream.
type ProcessorSummary struct {
	Stream      string `json:"stream"`
	Processor   string `json:"processor"`
	Executors   int    `json:"executors"`   // live members (heartbeat not expired)
	Owned       int    `json:"owned"`       // partitions whose lock is held
	Partitions  int    `json:"partitions"`  // partitions of the stream
	Lag         *int64 `json:"lag"`         // entries not yet delivered; null when Redis knows it for no partition
	Pending     int64  `json:"pending"`     // delivered, not acknowledged
	Quarantined int    `json:"quarantined"` // partitions stopped by the Quarantine or Halt policy
	Dead        int64  `json:"dead"`        // entries in its dead letters (XLEN)
}

// Worker is one worker, the executors it runs and the task queues it works
// for.
type Worker struct {
	// ID is the worker ID, read from the lock values of the partitions its
	// executors hold and from the consumers of the task queues' ready
	// streams; "" gathers the executors that hold no partition, whose
	// worker Redis does not record.
	ID        string       `json:"id"`
	Leader    bool         `json:"leader"`
	Executors []Executor   `json:"executors"`
	Queues    []TaskWorker `json:"queues"` // the task queues it works for
}

// TaskWorkerAlive is how recently a task worker must have been heard of for
// it to count as alive: a running worker beats every second in each of its
// queues' workers sets, idle or not, and claims its running tasks' entries
// again at least every second (a read that gives it entries counts too).
const TaskWorkerAlive = 5 * time.Second

// TaskWorker is one worker of a task queue, as the consumer of its name in
// the queue's ready streams. A worker that stopped is listed while it is
// alive or has tasks delivered, then no more (the leader deletes its
// consumers after 10 idle minutes with nothing pending).
type TaskWorker struct {
	Worker string `json:"worker"`
	Queue  string `json:"queue"`
	// Running is the number of ready entries delivered to it and not
	// acknowledged: the tasks it runs, or those it took before it died
	// (reclaimed by the leader after the visibility timeout).
	Running int64 `json:"running"`
	// Alive reports whether it was heard of (a beat, a read that gave it
	// entries, a claim) within TaskWorkerAlive.
	Alive bool `json:"alive"`
	// IdleMS is the time since it was last heard of, in milliseconds.
	IdleMS int64 `json:"idle_ms"`
}

// Executor is one processor's executor on a worker.
type Executor struct {
	ID         string `json:"id"`
	Stream     string `json:"stream"`
	Processor  string `json:"processor"`
	Partitions []int  `json:"partitions"` // partitions whose lock it holds
	Alive      bool   `json:"alive"`      // heartbeat deadline not passed
	// HeartbeatAgeMS is the time since its last heartbeat, in milliseconds
	// (server time minus its deadline minus the processor's lock expiry).
	HeartbeatAgeMS int64 `json:"heartbeat_age_ms"`
}

// StreamReport is the state of one stream, per partition and per
// processor: what "leat inspect STREAM --json" prints. Field names and
// meanings are stable; new fields may be added.
type StreamReport struct {
	App        string            `json:"app"`
	Stream     string            `json:"stream"`
	Time       time.Time         `json:"time"` // the Redis server's time when read
	Size       int64             `json:"size"` // retention per partition (XADD MAXLEN ~)
	Codec      string            `json:"codec"`
	KeyField   string            `json:"key_field,omitempty"`
	Length     int64             `json:"length"` // entries kept, all partitions
	Partitions []Partition       `json:"partitions"`
	Processors []ProcessorReport `json:"processors"`
	Warnings   []string          `json:"warnings"`
}

// Partition is one partition stream.
type Partition struct {
	Partition    int    `json:"partition"`
	Length       int64  `json:"length"`        // XLEN: entries kept
	EntriesAdded int64  `json:"entries_added"` // ever added, trimmed ones included
	FirstID      string `json:"first_id"`      // oldest entry kept, "" when empty
	LastID       string `json:"last_id"`       // newest entry, "" when empty
}

// ProcessorReport is one processor of the stream.
type ProcessorReport struct {
	Processor   string `json:"processor"`
	Executors   int    `json:"executors"` // live members
	Owned       int    `json:"owned"`     // partitions whose lock is held
	Lag         *int64 `json:"lag"`       // sum of the known lags; null when none is known
	Pending     int64  `json:"pending"`
	Quarantined int    `json:"quarantined"`
	Dead        int64  `json:"dead"` // entries in its dead letters (XLEN)
	// Tables are the processor's tables (name and codec) its workers
	// recorded; omitted when it keeps none.
	Tables     []Table              `json:"tables,omitempty"`
	Partitions []ProcessorPartition `json:"partitions"`
}

// Table is a table a processor keeps (stream.DeclareTable), as its workers
// recorded it.
type Table struct {
	Name  string `json:"name"`
	Codec string `json:"codec"`
}

// ProcessorPartition is what a processor has done with one partition.
type ProcessorPartition struct {
	Partition int    `json:"partition"`
	Owner     *Owner `json:"owner"` // null when no executor holds the lock
	// Lag is the number of entries not yet delivered to the processor
	// (XINFO GROUPS lag, else entries-added minus entries-read); null when
	// Redis does not know it, or the consumer group does not exist yet.
	Lag             *int64 `json:"lag"`
	Pending         int64  `json:"pending"`                     // delivered, not acknowledged
	OldestPendingID string `json:"oldest_pending_id,omitempty"` // "" when nothing is pending
	// OldestPendingAgeMS is the age of the oldest pending entry in
	// milliseconds (server time minus the time in its ID); null when
	// nothing is pending.
	OldestPendingAgeMS *int64      `json:"oldest_pending_age_ms"`
	LastDeliveredID    string      `json:"last_delivered_id,omitempty"`
	Consumers          int64       `json:"consumers"`      // consumers of the group on this partition
	Quarantine         *Quarantine `json:"quarantine"`     // null unless the partition is stopped
	RetentionRisk      bool        `json:"retention_risk"` // lag reached RetentionWarning of the size
}

// Owner is the holder of a partition lock.
type Owner struct {
	Executor string `json:"executor"`
	Worker   string `json:"worker"`
}

// Quarantine is the report of a partition stopped by the Quarantine or
// Halt policy.
type Quarantine struct {
	Policy   string    `json:"policy"` // "quarantine" or "halt"
	Executor string    `json:"executor"`
	Worker   string    `json:"worker,omitempty"`
	ID       string    `json:"id,omitempty"` // the failing entry
	Error    string    `json:"error"`
	Time     time.Time `json:"time"`
}
