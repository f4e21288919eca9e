// The key schema: the one place where leat names its Redis keys.
//
// # Layout
//
// Every key starts with the configured prefix (default "leat") and carries a
// Redis Cluster hash tag in braces. The tag decides the slot, so it is chosen
// by what must live together:
//
//   - each partition of a stream has its own tag {app:stream:p}, so the
//     partitions of one stream spread across the masters of a cluster;
//   - a processor's partition lock shares the tag of its partition, so a
//     script can check the lock and touch the stream in one step;
//   - a processor's group state (members, assignment, control stream,
//     admin lock, dead letters) shares the tag {app:stream:processor};
//   - app-wide state (registry, leader lease) shares the tag {app}.
//
// Names of apps, streams and processors are validated by [ValidName], so a
// tag can never be confused with another: they contain no ':' nor braces.
//
// The table of keys, their types, writers and TTLs is in docs/architecture.md.

package rdb

import (
	"fmt"
	"regexp"
	"strconv"
)

// DefaultPrefix is the key prefix used when none is configured.
const DefaultPrefix = "leat"

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ValidName reports whether s can be used as an app, stream or processor name:
// 1 to 128 characters among letters, digits, '_', '.', '-'.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// CheckName returns a descriptive error when s is not a valid name; what says
// what the name is for ("app", "stream", "processor").
func CheckName(what, s string) error {
	if ValidName(s) {
		return nil
	}
	if s == "" {
		return fmt.Errorf("%s name is empty", what)
	}
	return fmt.Errorf("%s name %q is invalid: use 1 to 128 letters, digits, '_', '.' or '-'", what, s)
}

// ValidPrefix reports whether s can be used as a key prefix: like a name, but
// ':' is allowed so prefixes can be nested ("staging:leat").
func ValidPrefix(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == '_' || r == '.' || r == '-' || r == ':':
		default:
			return false
		}
	}
	return true
}

// KeySpace names the keys of one app under one prefix.
type KeySpace struct {
	Prefix string
	App    string
}

// NewKeySpace returns the key space of app under prefix (DefaultPrefix when empty).
func NewKeySpace(prefix, app string) KeySpace {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return KeySpace{Prefix: prefix, App: app}
}

func (s KeySpace) key(kind, tag string) string { return s.Prefix + ":" + kind + ":{" + tag + "}" }

func (s KeySpace) appTag() string { return s.App }

func (s KeySpace) partTag(stream string, p int) string {
	return s.App + ":" + stream + ":" + strconv.Itoa(p)
}

func (s KeySpace) procTag(stream, processor string) string {
	return s.App + ":" + stream + ":" + processor
}

// Partition is the stream holding partition p of stream (type stream; written
// by senders with XADD MAXLEN ~; no TTL).
func (s KeySpace) Partition(stream string, p int) string { return s.key("s", s.partTag(stream, p)) }

// PartitionPattern matches every partition key of stream (for SCAN in tools).
func (s KeySpace) PartitionPattern(stream string) string {
	return s.Prefix + ":s:{" + s.App + ":" + stream + ":*}"
}

// Registry is the hash of stream definitions of the app: field = stream name,
// value = JSON definition (written on declaration/start; no TTL).
func (s KeySpace) Registry() string { return s.key("streams", s.appTag()) }

// Processors is the hash of processor definitions of the app: field =
// "stream/processor", value = JSON definition (written on start; no TTL).
func (s KeySpace) Processors() string { return s.key("processors", s.appTag()) }

// Leader is the app's leader lease (string holding a random token and the
// leader's worker ID; PX lease refreshed by the leader).
func (s KeySpace) Leader() string { return s.key("leader", s.appTag()) }

// LeaderOf is the lease of the leader of name, one of the app's scoped
// leader-only background work (app.Schedule.Lease): string holding a random
// token and the leader's worker ID, PX lease; its terms are counted by
// LeaderTerm too, in the app's slot.
func (s KeySpace) LeaderOf(name string) string { return s.key("leader", s.appTag()) + ":" + name }

// TaskLease is the name of the lease of task queue's leader (LeaderOf).
func TaskLease(queue string) string { return "task-" + queue }

// LeaderTerm is the counter of the app's leader terms (string, the fencing
// token of the last leader lease acquisition; no TTL).
func (s KeySpace) LeaderTerm() string { return s.key("term", s.appTag()) }

// Lock is the lock of processor on partition p of stream (string holding the
// owner's random token and identity; PX = lock expiry; refreshed by the
// owner).
func (s KeySpace) Lock(stream, processor string, p int) string {
	return s.key("lock", s.partTag(stream, p)) + ":" + processor
}

// Fence is the fencing counter of processor on partition p of stream
// (string, the token of the last acquisition of Lock; no TTL). It shares the
// lock's hash slot.
func (s KeySpace) Fence(stream, processor string, p int) string {
	return s.key("fence", s.partTag(stream, p)) + ":" + processor
}

// Local is a key named name in the hash slot of partition p of stream, for
// processors whose writes must share the partition lock's slot (fenced
// writes on Redis Cluster).
func (s KeySpace) Local(name, stream string, p int) string {
	return s.key(name, s.partTag(stream, p))
}

// Members is the sorted set of live executors of a processor: member =
// executor ID, score = heartbeat deadline in Unix milliseconds (server time).
func (s KeySpace) Members(stream, processor string) string {
	return s.key("members", s.procTag(stream, processor))
}

// Assignment is the processor's current assignment (string, JSON; written
// under the admin lock; no TTL).
func (s KeySpace) Assignment(stream, processor string) string {
	return s.key("assignment", s.procTag(stream, processor))
}

// Control is the processor's control stream (join, leave and dead notices;
// XADD MAXLEN ~ 1000).
func (s KeySpace) Control(stream, processor string) string {
	return s.key("control", s.procTag(stream, processor))
}

// Admin is the processor's admin lock, held while an assignment is computed
// and written (PX a few seconds).
func (s KeySpace) Admin(stream, processor string) string {
	return s.key("admin", s.procTag(stream, processor))
}

// DeadLetter is the processor's dead-letter stream (XADD MAXLEN ~ the
// partition size; no TTL).
func (s KeySpace) DeadLetter(stream, processor string) string {
	return s.key("dead", s.procTag(stream, processor))
}

// Quarantine is the hash of the processor's quarantined partitions: field =
// partition, value = JSON report (executor, entry ID, error, time).
func (s KeySpace) Quarantine(stream, processor string) string {
	return s.key("quarantine", s.procTag(stream, processor))
}

// Table is the hash of table name kept by processor on partition p of
// stream: field = key, value = the key's encoded value (written only by the
// partition's owner, with its acknowledgements; no TTL). It shares the
// partition lock's hash slot.
func (s KeySpace) Table(stream, processor, name string, p int) string {
	return s.key("table", s.partTag(stream, p)) + ":" + processor + ":" + name
}
