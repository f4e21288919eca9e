package rdb

// Control plane keys. They share the app's hash tag {app}, so one
// transaction writes a worker's record and the index of live workers.

// PlaneWorkers is the sorted set of the workers registered with the control
// plane: member = worker ID, score = the Unix ms its record expires at
// (entries past their score are removed by the next registration or
// heartbeat; no TTL).
func (s KeySpace) PlaneWorkers() string { return s.key("pworkers", s.appTag()) }

// PlaneWorker is the record of worker id of the control plane (string
// holding JSON: pool, host, queues, revision, health, last setup; PX = three
// heartbeat intervals, renewed by each heartbeat).
func (s KeySpace) PlaneWorker(id string) string { return s.key("pworker", s.appTag()) + ":" + id }

// PlaneRevisions is the hash of the revisions the control plane resolved:
// field = deployment name, value = JSON (revision, ref, when, last error);
// written by every "leat serve" that polls the deployment's source; no TTL.
func (s KeySpace) PlaneRevisions() string { return s.key("prevs", s.appTag()) }
