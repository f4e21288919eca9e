// Package controlplane configures workers centrally: a worker that knows
// only the control plane's URL and its pool's token registers, receives how
// to reach Redis, the task queues to run and the deployment to run them
// with, and heartbeats; the control plane answers each heartbeat with the
// revision to run, which changes when the deployment's source moves.
//
// # Pools file
//
// A pools file ([Load]) declares worker pools, each with its token (read
// from an environment variable or a file, never written in the file), its
// queues and its deployment, and the deployments: a source (a git
// repository and ref, or a directory), setup steps, a start command and an
// environment. It is YAML read strictly: an unknown field, a value of the
// wrong type, a number where a string goes, all refused with their line.
//
// # State
//
// A [Plane] keeps nothing in memory that another replica needs: worker
// records (rdb.KeySpace.PlaneWorker, expiring three heartbeats after the
// last) and resolved revisions (rdb.KeySpace.PlaneRevisions) are in Redis.
// Workers are stateless: one that is killed is replaced by another started
// with the same URL and token.
//
// # Credentials
//
// Pool tokens are compared in constant time, as SHA-256 digests, against
// every pool's; a refused one is logged with the remote address and
// answered 401 without detail. A pool without a Redis URL of its own gets a
// Redis user the control plane creates (ACL SETUSER) with the worker's
// commands (rdb.WorkerCommands) on the app's key prefix only; its password
// is derived from the pool's token (HMAC-SHA256), so no replica stores it
// and a new token gives a new password.
package controlplane
