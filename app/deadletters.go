package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// ErrNotReplayable is matched by the error of ReplayDead for a dead letter
// that holds no event (its original entry was malformed): purge it.
var ErrNotReplayable = errors.New("app: dead letter holds no event to replay")

// ErrBadDeadLetter is matched by the errors of ReplayDead and DeleteDead
// for a name or an ID that cannot be one.
var ErrBadDeadLetter = errors.New("app: bad dead-letter request")

// deadPage is how many dead letters a replay or a purge of them all reads
// at once.
const deadPage = 100

// DeadResult says what ReplayDead or DeleteDead did: how many dead letters
// it replayed or deleted, and the IDs asked for that were not there
// (replayed or deleted meanwhile, or never there).
type DeadResult struct {
	Done    int      `json:"done"`
	Missing []string `json:"missing"`
}

// ReplayDead sends the dead letters ids of processor of stream back to the
// partition they came from (same key, codec, data and headers: a new entry
// of the partition, which every processor of the stream will process), in
// dead-letter order, and deletes them from the dead letters. Each is
// replayed once, even when ReplayDead is run again after a crash or runs
// twice at once: see rdb.ReplayDead for the steps. It stops at the first
// error, ErrNotReplayable for a dead letter without an event; the letters
// replayed before stay replayed.
func (a *App) ReplayDead(ctx context.Context, stream, processor string, ids ...string) (DeadResult, error) {
	d, err := a.deadLetters(ctx, stream, processor, true, ids)
	if err != nil {
		return DeadResult{Missing: []string{}}, err
	}
	res := DeadResult{Missing: []string{}}
	for _, id := range d.ids {
		m, ok, err := rdb.DeadEntry(ctx, a.client, d.key, id)
		if err != nil {
			return res, err
		}
		if !ok {
			res.Missing = append(res.Missing, id)
			continue
		}
		if err := d.replay(ctx, a, m.ID, m.Values); err != nil {
			return res, err
		}
		res.Done++
	}
	return res, nil
}

// ReplayAllDead replays, as ReplayDead does, every dead letter processor
// of stream holds when it starts (letters written meanwhile stay), in
// dead-letter order, and returns how many it replayed.
func (a *App) ReplayAllDead(ctx context.Context, stream, processor string) (int, error) {
	d, err := a.deadLetters(ctx, stream, processor, true, nil)
	if err != nil {
		return 0, err
	}
	last, err := rdb.DeadLast(ctx, a.client, d.key)
	if err != nil || last == "" {
		return 0, err
	}
	n := 0
	for {
		msgs, err := rdb.DeadRange(ctx, a.client, d.key, "", deadPage)
		if err != nil {
			return n, err
		}
		for _, m := range msgs {
			if compareIDs(m.ID, last) > 0 {
				return n, nil
			}
			if err := d.replay(ctx, a, m.ID, m.Values); err != nil {
				return n, err
			}
			n++
		}
		if len(msgs) < deadPage {
			return n, nil
		}
	}
}

// DeleteDead deletes the dead letters ids of processor of stream (XDEL).
func (a *App) DeleteDead(ctx context.Context, stream, processor string, ids ...string) (DeadResult, error) {
	res := DeadResult{Missing: []string{}}
	d, err := a.deadLetters(ctx, stream, processor, false, ids)
	if err != nil {
		return res, err
	}
	for _, id := range d.ids {
		n, err := rdb.DeleteDeadLetters(ctx, a.client, d.key, id)
		if err != nil {
			return res, err
		}
		if n == 0 {
			res.Missing = append(res.Missing, id)
		}
		res.Done += int(n)
	}
	return res, nil
}

// DeleteAllDead deletes every dead letter processor of stream holds when
// it starts (letters written meanwhile stay), in one XTRIM, and returns
// how many it deleted.
func (a *App) DeleteAllDead(ctx context.Context, stream, processor string) (int, error) {
	d, err := a.deadLetters(ctx, stream, processor, false, nil)
	if err != nil {
		return 0, err
	}
	last, err := rdb.DeadLast(ctx, a.client, d.key)
	if err != nil || last == "" {
		return 0, err
	}
	n, err := rdb.DeleteDeadThrough(ctx, a.client, d.key, last)
	return int(n), err
}

// deadSet is a request on the dead letters of a processor.
type deadSet struct {
	k         rdb.KeySpace
	stream    string
	processor string
	key       string
	def       core.Definition // when replaying
	ids       []string        // sorted, without duplicates
}

// deadLetters checks a request: the names, the IDs (sorted in dead-letter
// order), and for a replay the stream's definition in the registry.
func (a *App) deadLetters(ctx context.Context, stream, processor string, replay bool, ids []string) (*deadSet, error) {
	if err := rdb.CheckName("stream", stream); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDeadLetter, err)
	}
	if err := rdb.CheckName("processor", processor); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDeadLetter, err)
	}
	d := &deadSet{k: a.keys, stream: stream, processor: processor, key: a.keys.DeadLetter(stream, processor)}
	seen := map[string]bool{}
	for _, id := range ids {
		if _, _, ok := splitID(id); !ok {
			return nil, fmt.Errorf("%w: %q is not a dead-letter ID (a stream entry ID, such as 1700000000000-0)", ErrBadDeadLetter, id)
		}
		seen[id] = true
	}
	d.ids = slices.SortedFunc(maps.Keys(seen), compareIDs)
	if replay {
		def, err := core.LoadDefinition(ctx, a.client, a.keys.Registry(), stream)
		if err != nil {
			return nil, err
		}
		d.def = def
	}
	return d, nil
}

// replay moves dead letter id, whose fields are fields, back to its
// partition.
func (d *deadSet) replay(ctx context.Context, a *App, id string, fields map[string]any) error {
	str := func(f string) (string, bool) { s, ok := fields[f].(string); return s, ok }
	ps, _ := str(executor.DeadPartition)
	p, err := strconv.Atoi(ps)
	if err != nil || p < 0 || p >= d.def.Partitions {
		return fmt.Errorf("dead letter %s: partition %q is not one of the %d of stream %s", id, ps, d.def.Partitions, d.stream)
	}
	key, _ := str(core.FieldKey)
	codec, _ := str(core.FieldCodec)
	data, hasData := str(core.FieldData)
	if !hasData || codec == "" {
		return fmt.Errorf("%w: dead letter %s of processor %s of stream %s (its entry was malformed): purge it", ErrNotReplayable, id, d.processor, d.stream)
	}
	vals := []any{core.FieldKey, key, core.FieldCodec, codec, core.FieldData, data}
	var headers []string
	for f := range fields {
		if strings.HasPrefix(f, core.HeaderField) {
			headers = append(headers, f)
		}
	}
	slices.Sort(headers)
	for _, h := range headers {
		v, _ := str(h)
		vals = append(vals, h, v)
	}
	_, err = rdb.ReplayDead(ctx, a.client, d.k.Partition(d.stream, p), d.k.ReplayMark(d.stream, d.processor, p, id),
		d.def.Size, vals, d.key, id)
	if err != nil {
		return fmt.Errorf("replay dead letter %s of processor %s of stream %s: %w", id, d.processor, d.stream, err)
	}
	return nil
}

// splitID parses a stream entry ID "ms-seq".
func splitID(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, found && err1 == nil && err2 == nil
}

// compareIDs orders valid stream entry IDs as Redis does.
func compareIDs(x, y string) int {
	xm, xs, _ := splitID(x)
	ym, ys, _ := splitID(y)
	return cmp.Or(cmp.Compare(xm, ym), cmp.Compare(xs, ys))
}
