// Package lease holds leat's leases on Redis: locks taken with a fresh random
// value per acquisition and a fencing token, and the trust that a holder may
// place in a lock it cannot see expire.
//
// # Lock values and identities
//
// A lock's value is a random token drawn at each acquisition followed by the
// holder's identity ("TOKEN IDENTITY"). Refresh and release compare the whole
// value, so two holders that share an identity (two workers started with the
// same worker ID) never take each other's locks, and the identity stays
// readable for logs and inspect ([Holder]).
//
// An acquisition keeps its value across its tries: when a try fails in a way
// that leaves unknown whether Redis ran it (the connection broke after the
// command was written, and go-redis's own retry, if any, met a failover),
// the next try finds the lock holding this value and takes it again, with
// its TTL set anew and a new fencing token ([AcquireValue]), rather than
// waiting for it to expire as if another holder had it.
//
// # Fencing tokens
//
// Each acquisition also increments a counter kept beside the lock (same
// Cluster hash slot) and returns it: the token grows strictly from one holder
// to the next, even if Redis lost the counter (see lock_acquire.lua). A store
// that records the highest token it has seen and refuses writes carrying a
// lower one is safe from a holder that paused past its lease and resumed.
//
// # Trust
//
// A holder cannot see its lock expire: it trusts the lock until
//
//	start of the last successful acquisition or refresh + TTL - margin
//	margin = TTL/100 + min(TTL/10, 500ms)
//
// The TTL counts from when Redis ran the command, which is after it was sent,
// so trust ends before the key can expire; the margin covers clock rate
// differences (1%) and scheduling delays. [Trust] is a context that ends at
// that moment exactly: a timer cancels it, and its Err and Done read the
// monotonic clock themselves, so code that resumes after a freeze (SIGSTOP,
// a long GC pause) sees it ended before any timer had a chance to fire.
package lease
