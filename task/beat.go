package task

import (
	"context"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// A running worker beats every second in each of its queues' workers sets
// (rdb.KeySpace.TaskWorkers), all its queues in one pipeline, and leaves them
// when it stops: that is how the inspector knows it is alive while it is
// idle, since Redis (7.0) marks a consumer as seen only when a read gives
// it entries or a claim takes some.

// beatEvery is how often a running worker beats.
const beatEvery = time.Second

// beat beats for the share's queues every beatEvery until stop is closed.
func (s *share) beat(stop <-chan struct{}) {
	defer close(s.beatDone)
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.beating.Lock()
		shares.mu.Lock()
		qs := append([]*core(nil), s.queues...)
		shares.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), beatEvery)
		err := beatOnce(ctx, s.bg, qs)
		cancel()
		s.beating.Unlock()
		if err != nil && !failing {
			s.app.Logger().Warn("task workers' beat failed: the inspector may count them dead while it fails", "error", err)
		}
		failing = err != nil
	}
}

// beatOnce beats for qs in one pipeline on c, loading the script when the
// server does not have it.
func beatOnce(ctx context.Context, c redis.UniversalClient, qs []*core) error {
	if len(qs) == 0 {
		return nil
	}
	bs := make([]rdb.Beater, len(qs))
	for i, q := range qs {
		bs[i] = rdb.Beater{Workers: q.ks.TaskWorkers(q.name), Worker: q.worker}
	}
	return rdb.Beat(ctx, c, bs)
}

// leaveWorkers removes q's worker from the queue's workers set, on c: it stopped.
func leaveWorkers(c redis.UniversalClient, q *core) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := rdb.LeaveWorkers(ctx, c, q.ks.TaskWorkers(q.name), q.worker); err != nil {
		q.log.Warn("leaving the queue's workers failed: the inspector counts this worker alive a few seconds more", "error", err)
	}
}
