package stream

import "github.com/leatdev/leat/internal/topology"

// IsTransient reports whether err is a failure of Redis or of the way to it
// that goes away by itself within seconds, as during a failover, a restart
// or a resharding: a connection refused, reset or closed, a network
// timeout, the client's connection pool exhausted, or one of the error
// replies LOADING, CLUSTERDOWN, TRYAGAIN, READONLY, MASTERDOWN, NOREPLICAS,
// UNBLOCKED, MOVED, ASK or "max number of clients reached", anywhere in
// err's chain. The end of a context is not transient, nor is any other
// error.
//
// The runtime retries a processor call that failed with a transient error
// before its failure policy applies (see executor.TransientRetry); a
// processor or middleware may use it to decide retries of its own.
func IsTransient(err error) bool { return topology.IsTransient(err) }
