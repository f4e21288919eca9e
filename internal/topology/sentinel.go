package topology

import (
	"context"
	"net"
	"runtime"
	"sync"
	"syscall"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// A Sentinel client (redis.NewFailoverClient) asks the sentinels for the
// master when it dials, and, when a sentinel announces a new master, closes
// the pooled connections to the old one. Copies of its options keep the
// first (the dialer) but not the second, which go-redis does not expose: the
// copies' connections would stay with an old master that is still up (a
// graceful failover, or an old master cut off from the sentinels but not
// from the clients) until it drops them, and what leat writes there is lost.
//
// So the copies leat makes of a Sentinel client (NewClient) have their
// connections tracked, and a follower, running while any copy is open, asks
// the client's dialer every FollowEvery (less often while it gets no answer)
// where the master is (the sentinel's answer, then a connection that is
// closed at once) and closes the tracked connections to any other server: a
// command under way on one fails (as on a broken connection), the pooled
// ones are dropped, and the next connections go to the new master.

// FollowEvery is how often the follower of a Sentinel client asks where the
// master is.
const FollowEvery = time.Second

// failoverAddr is the address go-redis gives the options of a Sentinel
// client (FailoverOptions.clientOptions).
const failoverAddr = "FailoverClient"

// followers holds the follower of each Sentinel client that has copies, and
// of each copy. The keys do not keep clients alive.
var followers sync.Map // weak.Pointer[redis.Client] -> *follower

// NewClient returns a client to the server of c with leat's settings (Own)
// and the changes set makes to them (nil: none), and a function that closes
// it. When c is a Sentinel client, or a copy of one, the new client's
// connections follow the master the sentinels name (see FollowEvery).
func NewClient(c *redis.Client, set func(*redis.Options)) (*redis.Client, func()) {
	opt := Own(*c.Options())
	if set != nil {
		set(opt)
	}
	f, tracked := followerOf(c)
	if f == nil {
		o := redis.NewClient(opt)
		return o, func() { _ = o.Close() }
	}
	if !tracked {
		opt.Dialer = f.tracking(opt.Dialer)
	}
	o := redis.NewClient(opt)
	key := weak.Make(o)
	followers.Store(key, f)
	f.acquire()
	var once sync.Once
	return o, func() {
		once.Do(func() {
			followers.Delete(key)
			_ = o.Close()
			f.release()
		})
	}
}

// followerOf returns the follower of c, and whether c is one of the copies
// whose connections it tracks; nil when c is not a Sentinel client.
func followerOf(c *redis.Client) (*follower, bool) {
	key := weak.Make(c)
	if v, ok := followers.Load(key); ok {
		f := v.(*follower)
		return f, f.client != key
	}
	opt := c.Options()
	if opt.Addr != failoverAddr || opt.Dialer == nil {
		return nil, false
	}
	f := &follower{client: key, dial: opt.Dialer, network: opt.Network, conns: map[*trackedConn]struct{}{}}
	if v, loaded := followers.LoadOrStore(key, f); loaded {
		f = v.(*follower)
		return f, f.client != key
	}
	runtime.AddCleanup(c, func(k weak.Pointer[redis.Client]) { followers.Delete(k) }, key)
	return f, false
}

// follower tracks the connections of the copies of one Sentinel client and
// closes those that are not to the master.
type follower struct {
	client  weak.Pointer[redis.Client] // the Sentinel client copied
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	network string

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	refs   int                // open copies
	cancel context.CancelFunc // stops the follower's goroutine
	done   chan struct{}      // closed when it has stopped
}

// tracking returns dial with the connections it makes tracked.
func (f *follower) tracking(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: nc, f: f, remote: remoteOf(nc)}
		f.mu.Lock()
		f.conns[tc] = struct{}{}
		f.mu.Unlock()
		if sc, ok := nc.(syscall.Conn); ok {
			// go-redis checks a pooled connection's health through
			// syscall.Conn: keep that.
			return &trackedSyscallConn{trackedConn: tc, sc: sc}, nil
		}
		return tc, nil
	}
}

// acquire counts an open copy; the first starts the follower.
func (f *follower) acquire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refs++
	if f.refs == 1 {
		var ctx context.Context
		ctx, f.cancel = context.WithCancel(context.Background())
		f.done = make(chan struct{})
		go f.run(ctx, f.done)
	}
}

// release counts a copy closed; the last stops the follower and waits for
// it.
func (f *follower) release() {
	f.mu.Lock()
	f.refs--
	if f.refs > 0 {
		f.mu.Unlock()
		return
	}
	cancel, done := f.cancel, f.done
	f.mu.Unlock()
	cancel()
	<-done
}

// run follows the master until ctx ends. While no answer comes (the
// sentinels or the master unreachable: a failover under way, whose broken
// connections are dialed again through the sentinel anyway), it asks less
// often, down to every 8*FollowEvery.
func (f *follower) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	wait := FollowEvery
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if f.follow(ctx) {
			wait = FollowEvery
		} else {
			wait = min(2*wait, 8*FollowEvery)
		}
		t.Reset(wait)
	}
}

// follow asks where the master is and closes the tracked connections to
// other servers; it reports whether it had an answer. Without one it
// leaves them.
func (f *follower) follow(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, FollowEvery)
	defer cancel()
	nc, err := f.dial(ctx, f.network, "")
	if err != nil {
		return false
	}
	master := remoteOf(nc)
	_ = nc.Close()
	if master == "" {
		return false
	}
	f.mu.Lock()
	var stale []*trackedConn
	for tc := range f.conns {
		if tc.remote != master && tc.remote != "" {
			stale = append(stale, tc)
		}
	}
	f.mu.Unlock()
	for _, tc := range stale {
		_ = tc.Close()
	}
	return true
}

// remoteOf returns the address nc is connected to ("" when it does not say).
func remoteOf(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}

// trackedConn is a connection of a copy of a Sentinel client.
type trackedConn struct {
	net.Conn
	f      *follower
	remote string
}

func (c *trackedConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}

// NetConn returns the connection tracked, as tls.Conn does.
func (c *trackedConn) NetConn() net.Conn { return c.Conn }

// trackedSyscallConn is a trackedConn whose connection is a syscall.Conn.
type trackedSyscallConn struct {
	*trackedConn
	sc syscall.Conn
}

func (c *trackedSyscallConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }
