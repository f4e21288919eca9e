package rdb

import "strconv"

// Task queue keys. Every key of a queue shares the hash tag
// {app:task:queue}, so each queue lives in one Cluster slot and its scripts
// touch only that slot; the queues of an app spread across the masters. The
// per-task and per-key names below are prefixes: a script appends the task
// ID or the task key.

func (s KeySpace) taskTag(queue string) string { return s.App + ":task:" + queue }

// TaskQueues is the hash of task queue definitions of the app: field = queue
// name, value = JSON definition (written when a queue is declared; no TTL).
func (s KeySpace) TaskQueues() string { return s.key("tqueues", s.appTag()) }

// TaskStream is the stream of ready tasks of priority level (0 first) of a
// queue (type stream, one consumer group; an entry is deleted when its task
// is acknowledged, so the stream only holds ready and running tasks).
func (s KeySpace) TaskStream(queue string, level int) string {
	return s.TaskStreamPrefix(queue) + strconv.Itoa(level)
}

// TaskStagePrefix starts the key a new task's hash is written to by
// enqueue.lua before it is renamed into place (TaskPrefix + task ID) with
// RENAMENX, in the same script: PREFIX + task ID (type hash; never outlives
// the script). RENAMENX never replaces a key, so a Redis user allowed to
// write staged hashes and to rename them onto task hashes (write-only) can
// create tasks but never rewrite one.
func (s KeySpace) TaskStagePrefix(queue string) string { return s.key("tnew", s.taskTag(queue)) + ":" }

// TaskStreamPrefix is TaskStream without its level.
func (s KeySpace) TaskStreamPrefix(queue string) string { return s.key("tq", s.taskTag(queue)) + ":" }

// TaskPrefix starts the hash of each task: PREFIX + task ID (type hash;
// no TTL while the task is pending, scheduled, active or retrying; the
// result retention once it succeeded, failed or was cancelled; the dead
// age once dead).
func (s KeySpace) TaskPrefix(queue string) string { return s.key("tt", s.taskTag(queue)) + ":" }

// TaskScheduled is the sorted set of delayed and retrying tasks of a queue:
// member = task ID, score = due time in Unix milliseconds (no TTL; a member
// leaves when due).
func (s KeySpace) TaskScheduled(queue string) string { return s.key("tsched", s.taskTag(queue)) }

// TaskDead is the sorted set of dead tasks of a queue: member = task ID,
// score = time of death in Unix milliseconds (bounded by count and age).
func (s KeySpace) TaskDead(queue string) string { return s.key("tdead", s.taskTag(queue)) }

// TaskDone is the sorted set of finished tasks whose hashes are retained:
// member = "S|", "F|" or "C|" (succeeded, failed, cancelled) + task ID,
// score = end of retention in Unix milliseconds (members leave then).
func (s KeySpace) TaskDone(queue string) string { return s.key("tdone", s.taskTag(queue)) }

// TaskCounts is the hash of task counts per state of a queue (field =
// state, value = count; no TTL), kept by every script that moves a task.
func (s KeySpace) TaskCounts(queue string) string { return s.key("tcount", s.taskTag(queue)) }

// TaskUniquePrefix starts the unique lock of a task: PREFIX + unique key
// (string holding the task ID; PX the unique TTL; deleted when the task
// ends).
func (s KeySpace) TaskUniquePrefix(queue string) string {
	return s.key("tuniq", s.taskTag(queue)) + ":"
}

// TaskKeyPrefix starts the list of waiting tasks of one key of a keyed
// queue: PREFIX + key (type list of task IDs, head = the key's next or
// running task; deleted by Redis when empty).
func (s KeySpace) TaskKeyPrefix(queue string) string { return s.key("tkey", s.taskTag(queue)) + ":" }

// TaskKeys is the set of keys of a keyed queue that have tasks waiting or
// running (no TTL; a key leaves when its list empties).
func (s KeySpace) TaskKeys(queue string) string { return s.key("tkeys", s.taskTag(queue)) }

// TaskRatePrefix is the rate-limit counter prefix of a keyed queue: PREFIX + key
// (string; PX the rate window).
func (s KeySpace) TaskRatePrefix(queue string) string { return s.key("trate", s.taskTag(queue)) + ":" }

// TaskFetchedPrefix is the prefix of what a worker's last fetch call of a
// slot took: PREFIX + worker + ":" + slot (string: the call's ID and its
// entries; PX a minute, deleted by the slot's next call that takes
// nothing). A call sent again after its reply was lost hands out those
// tasks again. PREFIX + worker + ":own" is where the worker's last
// recovery of its pending entries left off (string: an entry ID per
// priority level; PX a minute).
func (s KeySpace) TaskFetchedPrefix(queue string) string {
	return s.key("tfetch", s.taskTag(queue)) + ":"
}

// TaskWake is the list the queue's leader blocks on to wake up before its
// next due time (at most one element; no TTL).
func (s KeySpace) TaskWake(queue string) string { return s.key("twake", s.taskTag(queue)) }

// TaskQueueRate counts the tasks of a queue with a rate limit taken in the
// current window (task.Rate): a string whose TTL is the window's end.
func (s KeySpace) TaskQueueRate(queue string) string { return s.key("tqrate", s.taskTag(queue)) }

// TaskConfig is the hash of a queue's live settings (no TTL): field
// "concurrency", read by its workers every second, and "paused" (the Unix
// ms it was paused at), which fetch.lua checks.
func (s KeySpace) TaskConfig(queue string) string { return s.key("tconf", s.taskTag(queue)) }

// TaskWorkers is the sorted set of the workers running a queue: member =
// worker ID, score = its last beat in Unix milliseconds (server time;
// every second while it runs, removed when it stops; no TTL, members
// silent for 10 minutes are dropped when another worker starts).
func (s KeySpace) TaskWorkers(queue string) string { return s.key("tworkers", s.taskTag(queue)) }

// TaskCron is the hash of the last fired tick of each cron schedule of a
// queue: field = schedule name, value = "tick-ms:term:count" (no TTL).
func (s KeySpace) TaskCron(queue string) string { return s.key("tcron", s.taskTag(queue)) }

// TaskCancel is the channel on which cancellations of running tasks of a
// queue are published (message = task ID).
func (s KeySpace) TaskCancel(queue string) string { return s.key("tcancel", s.taskTag(queue)) }

// TaskEvents is the stream of the state changes of a queue's tasks
// (task.Events): one entry per move (fields t task ID, s new state, p
// previous state, a attempt, e error), written by the script that makes
// the move while the queue's live settings (TaskConfig) hold its length
// cap, field "ev"; capped with MAXLEN ~ by every XADD (no TTL; deleted when
// events are turned off).
func (s KeySpace) TaskEvents(queue string) string { return s.key("tev", s.taskTag(queue)) }

// TaskPattern matches every key of a queue (for SCAN in tests and tools).
func (s KeySpace) TaskPattern(queue string) string {
	return s.Prefix + ":*{" + s.taskTag(queue) + "}*"
}

// TaskUpdatesPrefix starts the stream of progress reports and partial
// results of each task: PREFIX + task ID (type stream, capped at about a
// thousand entries; PX the task's timeout plus its retention, renewed at
// every append).
func (s KeySpace) TaskUpdatesPrefix(queue string) string {
	return s.key("tupd", s.taskTag(queue)) + ":"
}

// TaskLogsPrefix starts the stream of log lines of each task: PREFIX + task
// ID (type stream, one entry per line, capped at the task queue's log cap;
// PX the task's timeout plus its retention, renewed at every append).
func (s KeySpace) TaskLogsPrefix(queue string) string { return s.key("tlog", s.taskTag(queue)) + ":" }

// TaskWebhooks is the sorted set of pending webhook deliveries of a queue:
// member = task ID, score = when the next attempt is due, in Unix
// milliseconds (a worker delivering one pushes it a lease ahead; no TTL, a
// member leaves once delivered or out of attempts).
func (s KeySpace) TaskWebhooks(queue string) string { return s.key("thook", s.taskTag(queue)) }

// TaskFinishedPrefix starts the counters of tasks of a queue that reached a
// final state (succeeded, failed, dead, cancelled), one per 10-second
// bucket: PREFIX + bucket number (Unix seconds / 10) (type string holding
// a count; PX a little over five minutes, set by the script that counts).
// They make the queue's throughput over the last minute and five minutes a
// read of a few dozen keys, never a scan.
func (s KeySpace) TaskFinishedPrefix(queue string) string {
	return s.key("tfin", s.taskTag(queue)) + ":"
}
