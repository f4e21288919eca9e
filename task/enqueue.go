package task

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	streamcore "github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
)

// ErrDuplicate is returned, with the existing task's ID, when a task with
// the same ID, or the same unique key within its TTL, exists.
var ErrDuplicate = errors.New("task: duplicate task")

// ErrInvalid is matched by the error of an enqueue refused for bad input
// (options, payload, priority, key): nothing was written.
var ErrInvalid = errors.New("task: invalid enqueue")

// An EnqueueOption tweaks one enqueue.
type EnqueueOption interface{ applyEnqueue(*enqueueSettings) error }

type enqueueFunc func(*enqueueSettings) error

func (f enqueueFunc) applyEnqueue(s *enqueueSettings) error { return f(s) }

type enqueueSettings struct {
	id         string
	runAt      time.Time
	delay      time.Duration
	maxRetries *int
	timeout    time.Duration
	retention  time.Duration
	unique     bool
	uniqueKey  string
	uniqueTTL  time.Duration
	priority   string
	key        string
	hasKey     bool
	webhook    string
	hookSecret string
	headers    map[string]string // merged Headers options
	uniqueMode string            // rdb.UniqueDebounce, rdb.UniqueThrottle or ""
	debounce   time.Duration     // Debounce's delay
	scheduled  bool              // the ID is a schedule's tick (scheduleID)
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,200}$`)

// ReservedIDPrefix starts the IDs of the ticks of cron schedules
// (Queue.Cron). They are the scheduler's alone: the ID option refuses them,
// so no client can enqueue a schedule's tick before the schedule does.
const ReservedIDPrefix = "cron:"

// ID gives the task an ID of the caller's choice (1 to 200 letters, digits,
// '_', '.', ':', '-', not starting with ReservedIDPrefix or FlowIDPrefix), instead of a
// generated one. Enqueueing a second task with an ID that exists returns
// ErrDuplicate. Not for EnqueueMany.
func ID(id string) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if !idRE.MatchString(id) {
			return fmt.Errorf("task ID %q is invalid: use 1 to 200 letters, digits, '_', '.', ':' or '-'", id)
		}
		if strings.HasPrefix(id, ReservedIDPrefix) {
			return fmt.Errorf("task ID %q is reserved: IDs starting with %q are the cron scheduler's", id, ReservedIDPrefix)
		}
		if strings.HasPrefix(id, FlowIDPrefix) {
			return fmt.Errorf("task ID %q is reserved: IDs starting with %q are flow nodes'", id, FlowIDPrefix)
		}
		s.id = id
		return nil
	})
}

// scheduleID gives a schedule's tick its ID, in the reserved namespace.
// Unexported: only the scheduler (cron.go) makes ticks.
func scheduleID(id string) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		s.id, s.scheduled = id, true
		return nil
	})
}

// Delay makes the task ready after d.
func Delay(d time.Duration) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if d < 0 {
			return fmt.Errorf("delay %s is negative", d)
		}
		s.delay = d
		return nil
	})
}

// At makes the task ready at t (at once when t is past).
func At(t time.Time) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if t.IsZero() {
			return errors.New("run-at time is zero")
		}
		s.runAt = t
		return nil
	})
}

// WithMaxRetries overrides the queue's MaxRetries for the task (0 to
// 10,000).
func WithMaxRetries(n int) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if err := checkMaxRetries(n); err != nil {
			return err
		}
		s.maxRetries = &n
		return nil
	})
}

// WithTimeout overrides the queue's Timeout for the task (at most 7 days).
func WithTimeout(d time.Duration) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if err := checkTimeout(d); err != nil {
			return err
		}
		s.timeout = d
		return nil
	})
}

// WithRetention overrides the queue's Retention for the task (at most 365
// days).
func WithRetention(d time.Duration) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if err := checkRetention(d); err != nil {
			return err
		}
		s.retention = d
		return nil
	})
}

// Priority enqueues the task at the named priority level of the queue
// (see Priorities and Weighted; default: the level named "default" when the
// queue has one, else the first).
func Priority(level string) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		s.priority = level
		return nil
	})
}

// Key sets the task's key in a keyed queue (required there, refused
// elsewhere): tasks of one key run one at a time, in order (with
// KeyConcurrency n, up to n at once, started in order).
func Key(key string) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if key == "" || len(key) > 512 {
			return fmt.Errorf("task key must be 1 to 512 bytes")
		}
		s.key, s.hasKey = key, true
		return nil
	})
}

// Enqueue creates a task with payload p and returns its ID. With Unique or
// ID, a task that exists already makes it return that task's ID and an
// error matching ErrDuplicate. Bad options or a payload that does not
// encode are refused before anything is written.
//
// Enqueues of a queue made at once from several goroutines share round
// trips: while two script calls are under way, the enqueues that arrive
// wait and go together in one call as soon as one of those ends. Each gets
// its own task's ID and error, as alone. When ctx ends while the enqueue
// waits, it returns ctx's error and nothing of it is written.
func (q *Queue[P, R]) Enqueue(ctx context.Context, p P, opts ...EnqueueOption) (string, error) {
	ids, err := q.EnqueueMany(ctx, []P{p}, opts...)
	if len(ids) == 1 {
		return ids[0], err
	}
	return "", err
}

// EnqueueMany creates a task per payload, with the same options, in
// pipelined round trips (thousands of tasks each), and returns their IDs
// in order. Every payload is encoded and checked before anything is
// written: a raw JSON payload (json.RawMessage) that a worker would decode
// with replacements (bytes that are not UTF-8, an escaped lone surrogate)
// or by dropping a value (a name twice in an object) is refused with
// ErrInvalid; so is, on a queue looked up (Lookup) in a program that
// declared it with a payload type, one that type's handlers would not
// decode exactly (an unknown field, a value of another kind or out of
// range). When some were duplicates (Unique), their IDs are the existing
// tasks' and the error matches ErrDuplicate. A call of up to 256 payloads
// shares round trips with the queue's concurrent enqueues, as Enqueue does.
func (q *Queue[P, R]) EnqueueMany(ctx context.Context, ps []P, opts ...EnqueueOption) ([]string, error) {
	raw := make([][]byte, len(ps))
	for i, p := range ps {
		b, err := encodePayload(p)
		if err == nil && q.check != nil {
			err = q.check(b)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: task queue %q: payload %d: %w", ErrInvalid, q.name, i, err)
		}
		raw[i] = b
	}
	return q.enqueueRaw(ctx, raw, opts)
}

// encodePayload encodes a task's payload (or result) as JSON, refusing
// text a reader would not decode as it was: a string that is not UTF-8
// (encoding/json would replace its bad bytes with U+FFFD), and in raw JSON
// (json.RawMessage, kept as given) bytes that are not UTF-8, an escaped
// lone surrogate or an object's name twice.
func encodePayload(p any) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if err := streamcore.CheckMarshaled(b, p); err != nil {
		return nil, err
	}
	if err := streamcore.CheckJSONText(b); err != nil {
		return nil, err
	}
	return b, nil
}

// enqueueRaw creates a task per encoded payload.
func (q *core) enqueueRaw(ctx context.Context, payloads [][]byte, opts []EnqueueOption) ([]string, error) {
	tasks, s, err := q.newTasks(payloads, opts)
	if err != nil {
		return nil, err
	}
	if err := q.registerRetry(ctx); err != nil {
		return nil, err
	}
	return q.create(ctx, tasks, s.id == "")
}

// newTasks checks opts and returns the tasks an enqueue of payloads
// creates, with the settings opts make (an error matching ErrInvalid when
// they are refused).
func (q *core) newTasks(payloads [][]byte, opts []EnqueueOption) ([]rdb.NewTask, *enqueueSettings, error) {
	var s enqueueSettings
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyEnqueue(&s); err != nil {
			return nil, nil, fmt.Errorf("%w: task queue %q: %w", ErrInvalid, q.name, err)
		}
	}
	if err := q.checkEnqueue(&s, len(payloads)); err != nil {
		return nil, nil, fmt.Errorf("%w: task queue %q: %w", ErrInvalid, q.name, err)
	}
	headers, err := encodeHeaders(s.headers)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: task queue %q: %w", ErrInvalid, q.name, err)
	}
	if !s.unique && q.set.uniqueTTL > 0 {
		s.unique, s.uniqueTTL = true, q.set.uniqueTTL // UniqueFor
	}
	level, _ := q.level(s.priority)
	maxRetries := q.set.maxRetries
	if s.maxRetries != nil {
		maxRetries = *s.maxRetries
	}
	timeout, retention := q.set.timeout, q.set.retention
	if s.timeout > 0 {
		timeout = s.timeout
	}
	if s.retention > 0 {
		retention = s.retention
	}
	runAt := s.runAt
	if s.delay > 0 {
		runAt = time.Now().Add(s.delay)
	}
	if s.debounce > 0 {
		runAt = time.Now().Add(s.debounce)
	}
	tasks := make([]rdb.NewTask, len(payloads))
	for i, p := range payloads {
		t := rdb.NewTask{
			ID: s.id, Payload: p, Level: level, RunAt: runAt, MaxRetries: maxRetries, Timeout: timeout,
			Retention: retention, Key: s.key, UniqueKey: s.uniqueKey, UniqueTTL: s.uniqueTTL,
			Webhook: s.webhook, WebhookSecret: s.hookSecret, Headers: headers, UniqueMode: s.uniqueMode,
		}
		if t.ID == "" {
			t.ID = uuid.Must(uuid.NewV7()).String()
		} else {
			t.Token = newToken() // see create
		}
		if s.unique && s.uniqueKey == "" {
			sum := sha256.Sum256(p)
			t.UniqueKey = hex.EncodeToString(sum[:16])
		}
		tasks[i] = t
	}
	return tasks, &s, nil
}

// newToken returns a random enqueue token: 16 hex digits.
func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (q *core) checkEnqueue(s *enqueueSettings, n int) error {
	if s.id != "" && n != 1 {
		return errors.New("the ID option names one task: not for many")
	}
	if strings.HasPrefix(s.id, ReservedIDPrefix) && !s.scheduled {
		return fmt.Errorf("task ID %q is reserved for the cron scheduler", s.id)
	}
	if s.webhook != "" {
		if err := q.checkWebhookTarget(s.webhook); err != nil {
			return err
		}
	}
	if s.hookSecret != "" && s.webhook == "" {
		return errors.New("a webhook secret goes with a webhook (the Webhook option)")
	}
	if !s.runAt.IsZero() && s.delay > 0 {
		return errors.New("At and Delay are exclusive")
	}
	if s.debounce > 0 && (!s.runAt.IsZero() || s.delay > 0) {
		return errors.New("Debounce sets the delay: not with At or Delay")
	}
	if _, ok := q.level(s.priority); !ok {
		return q.unknownLevel(s.priority)
	}
	switch {
	case q.set.keyed && !s.hasKey:
		return errors.New("a keyed queue needs a key for every task (the Key option)")
	case !q.set.keyed && s.hasKey:
		return errors.New("the queue is not keyed: declare it with Keyed to give tasks keys")
	}
	return nil
}

// enqueueBatch is how many tasks one script call creates.
const enqueueBatch = 256

// pipelineBatches is how many script calls one round trip carries.
const pipelineBatches = 16

// Enqueue on Redis Cluster rides out a failover as stream sends do: the
// script calls of a round trip that failed because a master died or the
// cluster was down (topology.Classify: the call did not run, or its
// connection broke after it was written, so it may have run) are run again
// after a reload of the slot map, with backoff from enqueueRetryMin to
// enqueueRetryMax, until they answer, one fails otherwise, ctx ends, or
// enqueueRetryFor passes without progress (the bound of sends).
//
// Running a call again never creates a task twice, and a task it created
// is not reported as a duplicate: task IDs are made here, before the first
// run (UUIDv7), and the script refuses an ID or unique key that exists,
// answering with the existing task's ID. When that ID is the task's own
// generated one, the earlier run created it. An ID of the caller's choice
// may name an older task, so such a task also carries a random token of
// this enqueue, and the script reports a task with this ID and this token
// as created by an earlier run.
const (
	enqueueRetryMin = 20 * time.Millisecond
	enqueueRetryMax = 500 * time.Millisecond
	enqueueRetryFor = 30 * time.Second
)

// create writes tasks and returns their IDs. generated says that their IDs
// were generated by this enqueue. A few tasks share round trips with the
// queue's other enqueues under way (see joined); many are written in
// pipelined batches of their own.
func (q *core) create(ctx context.Context, tasks []rdb.NewTask, generated bool) ([]string, error) {
	if len(tasks) <= joinMax {
		return q.joinEnqueue(ctx, tasks, generated)
	}
	return (*enqueuer)(q).Alone(ctx, enqueueWork{tasks, generated})
}

// write runs enqueue.lua for tasks in pipelined batches and returns, for
// the tasks answered before an error, in order, the ID each names (its own,
// or the existing task's) and whether it was created.
func (q *core) write(ctx context.Context, tasks []rdb.NewTask) (ids []string, created []bool, err error) {
	ids = make([]string, 0, len(tasks))
	created = make([]bool, 0, len(tasks))
	for len(tasks) > 0 {
		var chunks [][]rdb.NewTask
		for len(tasks) > 0 && len(chunks) < pipelineBatches {
			n := min(len(tasks), enqueueBatch)
			chunks = append(chunks, tasks[:n])
			tasks = tasks[n:]
		}
		replies, err := q.runChunks(ctx, chunks)
		if err != nil {
			return ids, created, fmt.Errorf("task queue %q: enqueue: %w", q.name, err)
		}
		for _, v := range replies {
			c, got, err := rdb.ParseEnqueue(v)
			if err != nil {
				return ids, created, err
			}
			ids = append(ids, got...)
			created = append(created, c...)
		}
	}
	return ids, created, nil
}

// outcome returns the IDs of tasks as write answered them, with
// ErrDuplicate when some existed already: a task not created whose ID is
// its own generated one was created by an earlier run of the same call.
func (q *core) outcome(tasks []rdb.NewTask, generated bool, ids []string, created []bool) ([]string, error) {
	dups, full := 0, refusedCount(ids)
	for i, c := range created {
		if !c && ids[i] != "" && !(generated && ids[i] == tasks[i].ID) {
			dups++
		}
	}
	var errs []error
	if full > 0 {
		errs = append(errs, fmt.Errorf("%w: %d of %d tasks refused (MaxKeyBacklog %d)", ErrKeyBacklogFull, full, len(ids), q.set.keyBacklog))
	}
	if dups > 0 {
		errs = append(errs, fmt.Errorf("%w: %d of %d tasks exist already", ErrDuplicate, dups, len(ids)))
	}
	return ids, errors.Join(errs...)
}

// runChunks runs enqueue.lua once per chunk, the chunks sharing a pipeline,
// and returns each chunk's reply. Chunks that failed because the server did
// not know the script are run again after loading it (nothing of theirs was
// written); on Cluster, chunks that failed because of a failover are run
// again as described above.
func (q *core) runChunks(ctx context.Context, chunks [][]rdb.NewTask) ([][]any, error) {
	cluster := rdb.IsCluster(q.rdb)
	out := make([][]any, len(chunks))
	todo := make([]int, len(chunks))
	for i := range todo {
		todo[i] = i
	}
	wait := enqueueRetryMin
	giveUp := time.Now().Add(enqueueRetryFor)
	loaded := false // the scripts were loaded since the last wait
	for {
		before := len(todo)
		again, noScript, err := q.runRound(ctx, chunks, todo, out)
		switch {
		case err != nil && len(again) == 0:
			return nil, err
		case len(again) == 0:
			return out, nil
		case noScript && !loaded:
			// A server without the script (restarted, or a replica just
			// promoted): load it and run the calls again at once. On
			// Cluster a master may be gone meanwhile: the calls tell.
			loaded = true
			if lerr := rdb.LoadTaskScripts(ctx, q.rdb); lerr != nil && !(cluster && retryable(lerr)) {
				return nil, lerr
			}
			todo = again
			continue
		case !cluster:
			return nil, err
		}
		if len(again) < before {
			giveUp = time.Now().Add(enqueueRetryFor)
			wait = enqueueRetryMin
		}
		if time.Now().After(giveUp) {
			return nil, fmt.Errorf("%d of %d script calls not answered after retrying for %s: %w", len(again), len(chunks), enqueueRetryFor, err)
		}
		topology.Reload(q.rdb)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%d of %d script calls not answered: %w (retrying after: %w)", len(again), len(chunks), ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, enqueueRetryMax)
		todo, loaded = again, false
	}
}

// runRound runs the chunks at todo on one pipeline (a single call alone)
// and writes their replies into out. It returns the chunks to run again, in
// order, whether one of them failed with NOSCRIPT, and the error of the
// first of them: each failed with NOSCRIPT or, on Cluster, with an error
// that a failover explains (retryable). A chunk that failed otherwise makes
// it return no chunks and that error.
func (q *core) runRound(ctx context.Context, chunks [][]rdb.NewTask, todo []int, out [][]any) ([]int, bool, error) {
	cluster := rdb.IsCluster(q.rdb)
	if len(todo) == 1 {
		// EVALSHA, then EVAL when the server does not know the script.
		created, ids, err := rdb.Enqueue(ctx, q.rdb, q.enq, chunks[todo[0]])
		if err != nil {
			if cluster && retryable(err) {
				return todo, false, err
			}
			return nil, false, err
		}
		v := make([]any, 0, 2*len(ids))
		for i, id := range ids {
			v = append(v, boolInt(created[i]), id)
		}
		out[todo[0]] = v
		return nil, false, nil
	}
	vs, errs := rdb.EnqueueRound(ctx, q.rdb, q.enq, chunks, todo)
	var again []int
	var againErr error
	noScript := false
	for i, c := range todo {
		v, err := vs[i], errs[i]
		switch {
		case err == nil:
			out[c] = v
		case rdb.IsNoScript(err) || cluster && retryable(err):
			again = append(again, c)
			againErr = cmp.Or(againErr, err)
			noScript = noScript || rdb.IsNoScript(err)
		default:
			return nil, false, err
		}
	}
	return again, noScript, againErr
}

// registerRetry records the queue's definition (once per process), on
// Cluster through a failover as enqueue.lua's calls (the write is the same
// when made twice).
func (q *core) registerRetry(ctx context.Context) error {
	cluster := rdb.IsCluster(q.rdb)
	wait := enqueueRetryMin
	giveUp := time.Now().Add(enqueueRetryFor)
	for {
		err := q.register(ctx)
		if err == nil || !cluster || !retryable(err) || time.Now().After(giveUp) {
			return err
		}
		topology.Reload(q.rdb)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (retrying after: %w)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, enqueueRetryMax)
	}
}

// retryable reports whether a script call that failed with err may be run
// again: it did not run (refused, CLUSTERDOWN, MOVED, TRYAGAIN, ...), or its
// connection broke after it was written, when running it again finds the
// tasks it created (see create).
func retryable(err error) bool { return topology.Classify(err) != topology.Final }

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
