package topology

import (
	"github.com/redis/go-redis/v9"
)

// SendOnce returns a client to the servers of c with a pool of conns
// connections that never sends a command twice: go-redis sends a command
// again when its reply broke off or timed out, and a command that changes
// what it reads (XREADGROUP ">") would then take other entries, leaving the
// first ones pending with nobody knowing. The caller sees the error
// instead, and recovers. A cluster client also follows redirections no
// more (its slot map is reloaded as c's is, by the hook). It has leat's
// settings (NewClient). Close it with the function returned. Clients of other
// kinds are returned as they are.
func SendOnce(c redis.UniversalClient, conns int) (redis.UniversalClient, func()) {
	return Pooled(c, conns, func(opt *redis.Options) { opt.MaxRetries = -1 },
		func(opt *redis.ClusterOptions) { opt.MaxRedirects, opt.MaxRetries = -1, -1 })
}

// Pool returns a client to the servers of c with a pool of conns
// connections and c's settings otherwise (retries included), so that
// leat's own work does not grow the application's pool when it fires at
// once; and a function that closes it. Clients of other kinds are
// returned as they are.
func Pool(c redis.UniversalClient, conns int) (redis.UniversalClient, func()) {
	return Pooled(c, conns, KeepRetries, func(*redis.ClusterOptions) {})
}

// KeepRetries keeps, in a copy of a client's options, the client's retries:
// its options hold none (-1) as 0, which a new client would take for the
// default.
func KeepRetries(opt *redis.Options) {
	if opt.MaxRetries == 0 {
		opt.MaxRetries = -1
	}
}

// Pooled returns a copy of c with leat's settings (NewClient, OwnCluster)
// and a pool of conns connections, changed by set or setCluster, and a
// function that closes it. A cluster copy follows failovers as c does
// (Attach). Clients of other kinds are returned as they are.
func Pooled(c redis.UniversalClient, conns int, set func(*redis.Options), setCluster func(*redis.ClusterOptions)) (redis.UniversalClient, func()) {
	switch c := c.(type) {
	case *redis.Client:
		return NewClient(c, func(opt *redis.Options) {
			set(opt)
			opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = conns, 0, conns
		})
	case *redis.ClusterClient:
		opt := OwnCluster(*c.Options())
		setCluster(opt)
		opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = conns, 0, conns
		o := redis.NewClusterClient(opt)
		Attach(o) // hooks are not options: follow failovers like c
		return o, func() { _ = o.Close() }
	}
	return c, func() {}
}
