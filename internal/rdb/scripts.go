// The runtime's Lua scripts and a typed Go wrapper for each. Every script
// file starts with a header naming its KEYS, ARGV and return value; the
// wrappers repeat it at the call site.

package rdb

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed register_stream.lua
	registerStreamSrc string
	registerStream    = redis.NewScript(registerStreamSrc)

	//go:embed fetch.lua
	fetchSrc string
	fetch    = redis.NewScript(fetchSrc)

	//go:embed fetch_idle.lua
	fetchIdleSrc string
	fetchIdle    = redis.NewScript(fetchIdleSrc)

	//go:embed heartbeat.lua
	heartbeatSrc string
	heartbeat    = redis.NewScript(heartbeatSrc)

	//go:embed live_members.lua
	liveMembersSrc string
	liveMembers    = redis.NewScript(liveMembersSrc)

	//go:embed lock_acquire.lua
	lockAcquireSrc string
	lockAcquire    = redis.NewScript(lockAcquireSrc)

	//go:embed lock_refresh.lua
	lockRefreshSrc string
	lockRefresh    = redis.NewScript(lockRefreshSrc)

	//go:embed group_counters.lua
	groupCountersSrc string
	groupCounters    = redis.NewScript(groupCountersSrc)

	//go:embed lock_release.lua
	lockReleaseSrc string
	lockRelease    = redis.NewScript(lockReleaseSrc)

	//go:embed store_assignment.lua
	storeAssignmentSrc string
	storeAssignment    = redis.NewScript(storeAssignmentSrc)

	//go:embed alive.lua
	aliveSrc string
	alive    = redis.NewScript(aliveSrc)

	//go:embed delete_consumers.lua
	deleteConsumersSrc string
	deleteConsumers    = redis.NewScript(deleteConsumersSrc)

	//go:embed set_deliveries.lua
	setDeliveriesSrc string
	setDeliveries    = redis.NewScript(setDeliveriesSrc)

	//go:embed set_group.lua
	setGroupSrc string
	setGroup    = redis.NewScript(setGroupSrc)

	//go:embed table_writes.lua
	tableWritesSrc string
	//go:embed table_commit.lua
	tableCommitSrc string
	tableCommit    = redis.NewScript(tableWritesSrc + "\n" + tableCommitSrc)
)

// Load loads the scripts that are run with EVALSHA inside pipelines, after
// a NOSCRIPT error (a restarted or failed-over server).
func Load(ctx context.Context, c redis.Scripter) error {
	for _, s := range []*redis.Script{fetch, fetchIdle, lockRefresh, groupCounters, setGroup, deleteConsumers, guardedAdd} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}

// IsNoScript reports whether err says the server does not know a script.
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// RegisterStream writes def (a JSON object without "entry_codec") for
// stream into the registry hash unless the registry holds a definition with
// another partition count or key field. It returns the stream's entry codec
// (the codec of entries written without a codec field: the registered one
// when there is one, else codec, which it records) and true, or the
// conflicting definition and false.
//
// KEYS: registry. ARGV: stream, def, partitions, keyField, codec.
func RegisterStream(ctx context.Context, c redis.Scripter, registry, stream, def string, partitions int, keyField, codec string) (entryCodec, conflict string, ok bool, err error) {
	v, err := registerStream.Run(ctx, c, []string{registry}, stream, def, partitions, keyField, codec).Slice()
	if err != nil {
		return "", "", false, err
	}
	if len(v) != 2 {
		return "", "", false, fmt.Errorf("register stream: unexpected reply %v", v)
	}
	s, _ := v[1].(string)
	if n, _ := v[0].(int64); n == 1 {
		return s, "", true, nil
	}
	return "", s, false, nil
}

// Group outcomes of SetGroup.
const (
	GroupExisted = 0 // the group existed and was left alone
	GroupCreated = 1 // the group (and maybe the stream) was created
	GroupMoved   = 2 // the existing group was moved
)

// SetGroup creates group on a partition stream (and the stream) at start:
// "0", "$" or an entry ID. An existing group is moved there when move is
// set, left alone otherwise. The group's entries-read counter is set to the
// number of entries up to start (see set_group.lua). On a pipeline, load the
// scripts first (Load).
//
// KEYS: partition. ARGV: group, start, "create" or "move".
// Returns GroupExisted, GroupCreated or GroupMoved.
func SetGroup(ctx context.Context, c redis.Scripter, partition, group, start string, move bool) *redis.Cmd {
	mode := "create"
	if move {
		mode = "move"
	}
	if _, ok := c.(redis.Pipeliner); ok {
		return setGroup.EvalSha(ctx, c, []string{partition}, group, start, mode)
	}
	return setGroup.Run(ctx, c, []string{partition}, group, start, mode)
}

// DeleteConsumersOn deletes those of consumers of group on a partition stream
// that have nothing pending, checking and deleting in one atomic step (see
// delete_consumers.lua). The command's value is the number deleted. On a
// pipeline, load the scripts first (Load).
//
// KEYS: partition. ARGV: group, consumers...
func DeleteConsumersOn(ctx context.Context, c redis.Scripter, partition, group string, consumers ...string) *redis.Cmd {
	args := make([]any, 0, 1+len(consumers))
	args = append(args, group)
	for _, name := range consumers {
		args = append(args, name)
	}
	if _, ok := c.(redis.Pipeliner); ok {
		return deleteConsumers.EvalSha(ctx, c, []string{partition}, args...)
	}
	return deleteConsumers.Run(ctx, c, []string{partition}, args...)
}

// SetDeliveries sets the delivery counters of pending entries of a
// partition (counts maps entry IDs to counts), when the caller holds the
// partition's lock (see set_deliveries.lua). It returns how many it set.
//
// KEYS: lock, partition. ARGV: token, group, consumer, (id, count)...
func SetDeliveries(ctx context.Context, c redis.Scripter, lock, partition, token, group, consumer string, counts map[string]int64) (int64, error) {
	args := make([]any, 0, 3+2*len(counts))
	args = append(args, token, group, consumer)
	for id, n := range counts {
		args = append(args, id, n)
	}
	return setDeliveries.Run(ctx, c, []string{lock, partition}, args...).Int64()
}

// FetchResult is the outcome of a fenced fetch of one partition.
type FetchResult struct {
	Held    bool     // the caller held the lock; false means nothing was read
	Cursor  string   // next XAUTOCLAIM cursor in recovery, "0-0" when done; "" for new entries
	Counts  []int64  // delivery counts aligned with the entries read (recovery only)
	Deleted []string // pending IDs whose entries are gone (recovery only)
	Last    string   // the stream's last ID, when no new entry was read
}

// Heartbeat records that member is alive for ttlMillis more (server time)
// and returns whether it was a member before, and the members whose
// heartbeat expired.
//
// KEYS: members. ARGV: member, ttl.
func Heartbeat(ctx context.Context, c redis.Scripter, members, member string, ttlMillis int64) (present bool, expired []string, err error) {
	v, err := heartbeat.Run(ctx, c, []string{members}, member, ttlMillis).Slice()
	if err != nil {
		return false, nil, err
	}
	if len(v) != 2 {
		return false, nil, fmt.Errorf("heartbeat: malformed reply %v", v)
	}
	p, _ := v[0].(int64)
	return p == 1, strings1(v[1]), nil
}

// LiveMembers removes members whose heartbeat expired and returns the live
// ones and the removed ones.
//
// KEYS: members.
func LiveMembers(ctx context.Context, c redis.Scripter, members string) (live, removed []string, err error) {
	v, err := liveMembers.Run(ctx, c, []string{members}).Slice()
	if err != nil {
		return nil, nil, err
	}
	if len(v) != 2 {
		return nil, nil, fmt.Errorf("live_members: malformed reply %v", v)
	}
	return strings1(v[0]), strings1(v[1]), nil
}

// Alive returns the members whose heartbeat deadline has not passed on the
// server's clock; it removes nothing.
//
// KEYS: members.
func Alive(ctx context.Context, c redis.Scripter, members string) ([]string, error) {
	v, err := alive.Run(ctx, c, []string{members}).Slice()
	if err != nil {
		return nil, err
	}
	return strings1(v), nil
}

func strings1(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// AcquireLock takes lock, holding value, for ttl, unless another value holds
// it. On success it returns the new fencing token, which is larger than any
// token handed out for this lock before (see lock_acquire.lua); otherwise it
// returns ok false, the value that holds the lock and its remaining TTL
// (negative when the key has no TTL or is already gone).
//
// KEYS: lock, fence. ARGV: value, ttl in ms.
func AcquireLock(ctx context.Context, c redis.Scripter, lock, fence, value string, ttl time.Duration) (token int64, holder string, left time.Duration, ok bool, err error) {
	v, err := lockAcquire.Run(ctx, c, []string{lock, fence}, value, ttl.Milliseconds()).Slice()
	if err != nil {
		return 0, "", 0, false, err
	}
	if st, _ := v[0].(int64); st == 1 && len(v) == 2 {
		token, _ = v[1].(int64)
		return token, "", 0, true, nil
	}
	if len(v) != 3 {
		return 0, "", 0, false, fmt.Errorf("lock_acquire: malformed reply %v", v)
	}
	holder, _ = v[1].(string)
	pttl, _ := v[2].(int64)
	return 0, holder, time.Duration(pttl) * time.Millisecond, false, nil
}

// RefreshLocks queues on pipe the extension to ttl of every lock in locks
// that still holds its value in values (one call; on Cluster the locks must
// share a hash slot). The command's reply lists the positions (1-based) of
// the locks not held; read it with LostLocks. Load the scripts (Load) and
// run the pipeline again after a NOSCRIPT error.
//
// KEYS: locks. ARGV: ttl in ms, values.
func RefreshLocks(ctx context.Context, pipe redis.Scripter, locks, values []string, ttl time.Duration) *redis.Cmd {
	args := make([]any, 0, len(values)+1)
	args = append(args, ttl.Milliseconds())
	for _, v := range values {
		args = append(args, v)
	}
	return lockRefresh.EvalSha(ctx, pipe, locks, args...)
}

// LostLocks returns the positions (0-based) of the locks a RefreshLocks
// command found not held.
func LostLocks(cmd *redis.Cmd) ([]int, error) {
	v, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(v))
	for _, x := range v {
		n, ok := x.(int64)
		if !ok || n < 1 {
			return nil, fmt.Errorf("lock_refresh: malformed reply %v", v)
		}
		out = append(out, int(n-1))
	}
	return out, nil
}

// QueueGroupCounters queues on pipe a read of the counters of the partition
// streams keys and of group on each (see group_counters.lua; on Cluster the
// keys must share a hash slot); read it with ParseGroupCounters. Load the
// scripts (Load) and run the pipeline again after a NOSCRIPT error.
//
// KEYS: partition streams. ARGV: group.
func QueueGroupCounters(ctx context.Context, pipe redis.Scripter, keys []string, group string) *redis.Cmd {
	return groupCounters.EvalSha(ctx, pipe, keys, group)
}

// Counters are the figures QueueGroupCounters reads about one partition stream.
type Counters struct {
	Exists          bool   // false when the stream does not exist
	Length          int64  // entries in the stream
	Added           int64  // entries-added
	FirstID         string // first entry's ID, "" when empty
	Group           bool   // the group exists
	LastDeliveredID string // the group's last-delivered-id
	EntriesRead     int64  // the group's entries-read
	EntriesReadOK   bool   // false when Redis does not know entries-read
}

// ParseGroupCounters parses the reply of a QueueGroupCounters command of n keys.
func ParseGroupCounters(cmd *redis.Cmd, n int) ([]Counters, error) {
	v, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(v) != n {
		return nil, fmt.Errorf("group_counters: %d replies for %d keys", len(v), n)
	}
	out := make([]Counters, n)
	for i, x := range v {
		r, _ := x.([]any)
		if len(r) == 0 {
			return nil, fmt.Errorf("group_counters: malformed reply %v", x)
		}
		if st, _ := r[0].(int64); st == 0 {
			continue
		}
		if len(r) != 7 {
			return nil, fmt.Errorf("group_counters: malformed reply %v", x)
		}
		c := &out[i]
		c.Exists = true
		c.Length, _ = r[1].(int64)
		c.Added, _ = r[2].(int64)
		c.FirstID, _ = r[3].(string)
		g, _ := r[4].(int64)
		c.Group = g == 1
		c.LastDeliveredID, _ = r[5].(string)
		c.EntriesRead, _ = r[6].(int64)
		c.EntriesReadOK = c.Group && c.EntriesRead >= 0
	}
	return out, nil
}

// ReleaseLock deletes lock if it holds value, and reports whether it did.
//
// KEYS: lock. ARGV: value.
func ReleaseLock(ctx context.Context, c redis.Scripter, lock, value string) (bool, error) {
	n, err := lockRelease.Run(ctx, c, []string{lock}, value).Int64()
	return n == 1, err
}

// Outcomes of StoreAssignment.
var (
	// ErrNotAdmin: the caller no longer holds the admin lock.
	ErrNotAdmin = errors.New("admin lock no longer held")
	// ErrStaleAssignment: the stored assignment is not the one the new one
	// was computed from.
	ErrStaleAssignment = errors.New("assignment changed meanwhile")
)

// StoreAssignment writes assignment (JSON, version from+1) if the caller
// still holds the admin lock with adminValue and the stored assignment's
// version is still from; otherwise it returns ErrNotAdmin or
// ErrStaleAssignment and writes nothing.
//
// KEYS: admin, assignment. ARGV: admin value, from, assignment.
func StoreAssignment(ctx context.Context, c redis.Scripter, admin, key, adminValue string, from int64, assignment []byte) error {
	n, err := storeAssignment.Run(ctx, c, []string{admin, key}, adminValue, from, assignment).Int64()
	switch {
	case err != nil:
		return err
	case n == 0:
		return ErrNotAdmin
	case n < 0:
		return ErrStaleAssignment
	}
	return nil
}

//go:embed stream_room.lua
var streamRoomSrc string

//go:embed guarded_add.lua
var guardedAddSrc string

var guardedAdd = redis.NewScript(streamRoomSrc + "\n" + guardedAddSrc)

// GuardedAdd queues on pipe the addition of entries (each a field, value
// list) to the partition stream key, refused when trimming to size could
// drop an entry a consumer group has not processed (see guarded_add.lua).
// Read the reply with ParseGuardedAdd.
//
// KEYS: partition. ARGV: size, n, then per entry its argument count and
// arguments.
func GuardedAdd(ctx context.Context, pipe redis.Scripter, key string, size int64, entries [][]any) *redis.Cmd {
	args := make([]any, 0, 2+len(entries)*9)
	args = append(args, size, len(entries))
	for _, e := range entries {
		args = append(args, len(e))
		args = append(args, e...)
	}
	return guardedAdd.EvalSha(ctx, pipe, []string{key}, args...)
}

// ParseGuardedAdd reads the reply of GuardedAdd: the entry IDs, or ok
// false and the most entries a group still has to process.
func ParseGuardedAdd(cmd *redis.Cmd) (ids []string, unprocessed int64, ok bool, err error) {
	v, err := cmd.Slice()
	if err != nil {
		return nil, 0, false, err
	}
	if len(v) != 2 {
		return nil, 0, false, fmt.Errorf("guarded_add: malformed reply %v", v)
	}
	if st, _ := v[0].(int64); st == 0 {
		unprocessed, _ = v[1].(int64)
		return nil, unprocessed, false, nil
	}
	return strings1(v[1]), 0, true, nil
}
