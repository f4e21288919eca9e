// Live settings: the fields of a queue's config hash that pause it and set
// its rate and concurrency while workers run, and the message that wakes
// the workers when they change.

package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ResumeMessage is what the queue's cancel channel (KeySpace.TaskCancel)
// carries when the queue is resumed, or its live rate changed: the workers
// that wait for either fetch again at once. No task ID starts with '~'.
const ResumeMessage = "~resume"

// Fields of the queue's live settings (KeySpace.TaskConfig): PausedField,
// whose presence pauses the queue (value: Unix ms of the pause; fetch.lua
// checks it); RateField, the rate limit set live, which fetch.lua applies
// in place of its worker's (LiveRate's text); ConcurrencyField, the
// concurrency per worker set live (ParseLiveConcurrency).
const (
	PausedField      = "paused"
	RateField        = "rate"
	ConcurrencyField = "concurrency"
)

// ParseLiveConcurrency reads ConcurrencyField's text: a whole number of at
// least 1, else none (false).
func ParseLiveConcurrency(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// LiveRate is the text of RateField for r ("N WINDOW_MS"; "0 0": no limit).
func LiveRate(r Rate) string {
	return strconv.Itoa(r.N) + " " + strconv.FormatInt(r.Window.Milliseconds(), 10)
}

// ParseLiveRate reads RateField's text.
func ParseLiveRate(s string) (Rate, error) {
	n, ms, ok := strings.Cut(s, " ")
	a, err1 := strconv.Atoi(n)
	b, err2 := strconv.ParseInt(ms, 10, 64)
	if !ok || err1 != nil || err2 != nil || a < 0 || b < 0 {
		return Rate{}, fmt.Errorf("live rate %q: want \"N WINDOW_MS\"", s)
	}
	return Rate{N: a, Window: time.Duration(b) * time.Millisecond}, nil
}

// Pause pauses the queue whose config hash is config, at the server's time
// (TIME, then HSETNX PausedField): a paused queue stays paused since the
// first Pause.
func Pause(ctx context.Context, c redis.Cmdable, config string) error {
	now, err := c.Time(ctx).Result()
	if err != nil {
		return err
	}
	return c.HSetNX(ctx, config, PausedField, now.UnixMilli()).Err()
}

// Unpause removes PausedField from the config hash config (HDEL).
func Unpause(ctx context.Context, c redis.Cmdable, config string) error {
	return c.HDel(ctx, config, PausedField).Err()
}

// PausedAt returns when the queue whose config hash is config was paused,
// and false when it is not.
func PausedAt(ctx context.Context, c redis.Cmdable, config string) (time.Time, bool, error) {
	v, err := c.HGet(ctx, config, PausedField).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	ms, _ := strconv.ParseInt(v, 10, 64)
	return time.UnixMilli(ms), true, nil
}

// SetLiveRate sets RateField of the config hash config to r (HSET).
func SetLiveRate(ctx context.Context, c redis.Cmdable, config string, r Rate) error {
	return c.HSet(ctx, config, RateField, LiveRate(r)).Err()
}

// ClearLiveRate removes RateField from the config hash config (HDEL).
func ClearLiveRate(ctx context.Context, c redis.Cmdable, config string) error {
	return c.HDel(ctx, config, RateField).Err()
}

// ReadLiveRate returns the text of RateField of the config hash config,
// and false when it has none.
func ReadLiveRate(ctx context.Context, c redis.Cmdable, config string) (string, bool, error) {
	v, err := c.HGet(ctx, config, RateField).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return v, err == nil, err
}

// SetLiveConcurrency sets ConcurrencyField of the config hash config to n
// (HSET).
func SetLiveConcurrency(ctx context.Context, c redis.Cmdable, config string, n int) error {
	return c.HSet(ctx, config, ConcurrencyField, n).Err()
}

// ClearLiveConcurrency removes ConcurrencyField from the config hash
// config (HDEL).
func ClearLiveConcurrency(ctx context.Context, c redis.Cmdable, config string) error {
	return c.HDel(ctx, config, ConcurrencyField).Err()
}

// WakeFetchers publishes ResumeMessage on the queue's cancel channel
// channel (KeySpace.TaskCancel).
func WakeFetchers(ctx context.Context, c redis.Cmdable, channel string) error {
	return c.Publish(ctx, channel, ResumeMessage).Err()
}

// Subscribe returns a subscription on c to no channel yet, for the queues'
// cancel channels (KeySpace.TaskCancel): cancellations, ResumeMessage.
func Subscribe(ctx context.Context, c redis.UniversalClient) *redis.PubSub {
	return c.Subscribe(ctx)
}

// SubscribeTo adds channels to the subscription ps (SUBSCRIBE).
func SubscribeTo(ctx context.Context, ps *redis.PubSub, channels ...string) error {
	return ps.Subscribe(ctx, channels...)
}

// UnsubscribeFrom removes channels from the subscription ps (UNSUBSCRIBE).
func UnsubscribeFrom(ctx context.Context, ps *redis.PubSub, channels ...string) error {
	return ps.Unsubscribe(ctx, channels...)
}

// ProbeUnblock sends CLIENT UNBLOCK of client 0, which does not exist, to
// learn whether the Redis user may run it: the answer is 0 when it may.
func ProbeUnblock(ctx context.Context, c redis.Cmdable) error {
	return c.ClientUnblock(ctx, 0).Err()
}
