package rdb

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed background_record.lua
	backgroundRecordSrc string
	backgroundRecord    = redis.NewScript(backgroundRecordSrc)
)

// Outcomes of RecordBackground.
var (
	// ErrNotLeader: the caller no longer holds the leader lease.
	ErrNotLeader = errors.New("leader lease no longer held")
	// ErrStaleRecord: the record was written by a later term, or holds a
	// later tick.
	ErrStaleRecord = errors.New("background task record is newer")
)

// Fields of a background task's record.
const (
	RecordTerm = "term" // the term that last wrote the record
	RecordTick = "tick" // a periodic task's last tick run, Unix microseconds
	RecordDone = "done" // the term that completed a task run once
)

// RecordBackground sets field (RecordTick or RecordDone) to value in a
// leader-only background task's record, with term, and sets the record's
// TTL, if leaseValue still holds the leader lease; it returns ErrNotLeader
// otherwise, and ErrStaleRecord when the record is newer (a later term, or
// a tick at or after value).
//
// KEYS: leader lease, record. ARGV: lease value, term, field, value, ttl in ms.
func RecordBackground(ctx context.Context, c redis.Scripter, leader, record, leaseValue string, term int64, field string, value int64, ttl time.Duration) error {
	n, err := backgroundRecord.Run(ctx, c, []string{leader, record}, leaseValue, term, field, value, ttl.Milliseconds()).Int64()
	switch {
	case err != nil:
		return err
	case n == 0:
		return ErrNotLeader
	case n < 0:
		return ErrStaleRecord
	}
	return nil
}
