package task

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// unblockable is a connection of its own for blocking commands that other
// goroutines interrupt with CLIENT UNBLOCK (which ends a blocked command as
// its timeout would). One goroutine runs the commands (ready, begin, end);
// any may kick.
type unblockable struct {
	client *redis.Client         // the connection's client
	admin  redis.UniversalClient // sends CLIENT UNBLOCK
	conn   *redis.Conn           // of the running goroutine

	mu     sync.Mutex
	id     int64         // CLIENT ID of conn
	ended  chan struct{} // closed when the command under way ends (nil: none)
	kicked bool          // CLIENT UNBLOCK is being sent for it
}

// ready takes a connection and asks its CLIENT ID, if not done yet.
func (u *unblockable) ready(ctx context.Context) error {
	if u.conn != nil {
		return nil
	}
	u.conn = u.client.Conn()
	id, err := rdb.ClientID(ctx, u.conn)
	if err != nil {
		u.reset()
		return err
	}
	u.mu.Lock()
	u.id = id
	u.mu.Unlock()
	return nil
}

// reset closes the connection: the next ready takes another.
func (u *unblockable) reset() {
	if u.conn != nil {
		_ = u.conn.Close()
		u.conn = nil
	}
}

// begin notes that a command is about to run on the connection; kick
// interrupts it from then on. u.mu is held.
func (u *unblockable) begin() { u.ended, u.kicked = make(chan struct{}), false }

// end notes that the command ended with err; the connection goes on an
// error but redis.Nil (a timeout). u.mu is held.
func (u *unblockable) end(err error) {
	close(u.ended)
	u.ended = nil
	if err != nil && !errors.Is(err, redis.Nil) {
		u.reset()
	}
}

// kick interrupts the command under way, if any (u.mu is held): CLIENT
// UNBLOCK, sent again every unblockAgain until the command ended (the
// first may reach the server before the command does).
func (u *unblockable) kick() {
	if u.ended == nil || u.kicked {
		return
	}
	u.kicked = true
	ended, id := u.ended, u.id
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = rdb.Unblock(ctx, u.admin, id)
			cancel()
			select {
			case <-ended:
				return
			case <-time.After(unblockAgain):
			}
		}
	}()
}

// await locks u.mu once there is work (idle, called with u.mu held, is
// false), waiting for a signal on more meanwhile; false, unlocked, when
// stop is closed first.
func (u *unblockable) await(idle func() bool, stop, more <-chan struct{}) bool {
	u.mu.Lock()
	for idle() {
		u.mu.Unlock()
		select {
		case <-stop:
			return false
		case <-more:
		}
		u.mu.Lock()
	}
	return true
}
