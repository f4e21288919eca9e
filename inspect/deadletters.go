package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// ErrBadDeadList is matched by the error of DeadLetters for a limit out of
// range or a malformed cursor.
var ErrBadDeadList = errors.New("inspect: bad dead-letter listing")

// ErrNoDeadLetter is matched by the error of DeadLetter for an ID that is
// not among the processor's dead letters.
var ErrNoDeadLetter = errors.New("inspect: no such dead letter")

// MaxDeadList is the largest limit of DeadLetters.
const MaxDeadList = 100

// DeadErrorMax bounds the error of a listed dead letter, in bytes: a longer
// one is cut (at a UTF-8 boundary) and ends with "…", as task listings
// cut task errors. DeadLetter returns it whole.
const DeadErrorMax = 512

// Fields of a dead-letter entry, as the executor's DeadLetter policy
// writes them (executor.DeadID and the others), beside the original
// entry's own fields (key, codec, data, h:NAME).
const (
	deadStream     = "dead:stream"
	deadPartition  = "dead:partition"
	deadID         = "dead:id"
	deadError      = "dead:error"
	deadTime       = "dead:time"
	deadDeliveries = "dead:deliveries"
	deadProcessor  = "dead:processor"
)

// DeadLetter is one entry of a processor's dead letters: an event its
// DeadLetter failure policy set aside, with why and when.
type DeadLetter struct {
	ID        string     `json:"id"`       // the dead letter's own ID (its stream entry ID)
	EntryID   string     `json:"entry_id"` // the original entry's ID in its partition
	Partition int        `json:"partition"`
	Key       string     `json:"key"`
	Time      *time.Time `json:"time"`     // when it died; null when not recorded
	Error     string     `json:"error"`    // why; cut to DeadErrorMax bytes in listings
	Attempts  *int64     `json:"attempts"` // deliveries before it died; null when not recorded
	Codec     string     `json:"codec,omitempty"`
	// Replayable is false when the dead letter holds no event (its
	// original entry was malformed): it can only be purged.
	Replayable bool              `json:"replayable"`
	Headers    map[string]string `json:"headers,omitempty"`
	// Filled by Inspector.DeadLetter only: the encoded event, and the
	// record decoded with its codec when the codec is known (DecodeError
	// says why not otherwise).
	Data        []byte `json:"data,omitempty"`
	Record      any    `json:"record,omitempty"`
	DecodeError string `json:"decode_error,omitempty"`
}

// DeadPage is a page of dead letters, oldest first, and the cursor of the
// next page ("" when this one reached the end).
type DeadPage struct {
	Stream    string       `json:"stream"`
	Processor string       `json:"processor"`
	Total     int64        `json:"total"` // dead letters the processor holds (XLEN)
	Letters   []DeadLetter `json:"letters"`
	Next      string       `json:"next,omitempty"`
}

// checkProcessor refuses names that cannot be a stream or a processor.
func checkProcessor(stream, processor string) error {
	if err := rdb.CheckName("stream", stream); err != nil {
		return err
	}
	return rdb.CheckName("processor", processor)
}

// DeadLetters lists at most limit (1 to MaxDeadList) dead letters of
// processor of stream, oldest first, after the cursor after ("" for the
// first page; else the Next of the previous page), without their event
// data and with their error cut to DeadErrorMax bytes. Its cost grows with
// limit, never with the number of dead letters: XLEN, then XRANGE with
// COUNT limit+1. A processor without dead letters lists none.
func (i *Inspector) DeadLetters(ctx context.Context, stream, processor, after string, limit int) (*DeadPage, error) {
	if err := checkProcessor(stream, processor); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDeadList, err)
	}
	if limit < 1 || limit > MaxDeadList {
		return nil, fmt.Errorf("%w: limit %d: from 1 to %d", ErrBadDeadList, limit, MaxDeadList)
	}
	if after != "" && !validID(after) {
		return nil, fmt.Errorf("%w: cursor %q is not a stream entry ID", ErrBadDeadList, after)
	}
	key := i.k.DeadLetter(stream, processor)
	n, err := rdb.DeadLengths(ctx, i.c, []string{key})
	if err != nil {
		return nil, err
	}
	msgs, err := rdb.DeadRange(ctx, i.c, key, after, limit+1)
	if err != nil {
		return nil, err
	}
	page := &DeadPage{Stream: stream, Processor: processor, Total: n[0], Letters: []DeadLetter{}}
	if len(msgs) > limit {
		msgs = msgs[:limit]
		page.Next = msgs[limit-1].ID
	}
	for _, m := range msgs {
		d := ParseDeadLetter(m.ID, m.Values)
		d.Error = clip(d.Error, DeadErrorMax)
		d.Headers, d.Data = nil, nil
		page.Letters = append(page.Letters, d)
	}
	return page, nil
}

// DeadLetter returns dead letter id of processor of stream whole: its
// event data, and the record decoded with its codec (the codecs leat
// knows by name: msgpack and json, compressed or not). It fails with an
// error matching ErrNoDeadLetter when there is no such dead letter.
func (i *Inspector) DeadLetter(ctx context.Context, stream, processor, id string) (*DeadLetter, error) {
	if err := checkProcessor(stream, processor); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDeadLetter, err)
	}
	if !validID(id) {
		return nil, fmt.Errorf("%w: %q is not a stream entry ID", ErrNoDeadLetter, id)
	}
	m, ok, err := rdb.DeadEntry(ctx, i.c, i.k.DeadLetter(stream, processor), id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w %s of processor %s of stream %s", ErrNoDeadLetter, id, processor, stream)
	}
	d := ParseDeadLetter(m.ID, m.Values)
	if !d.Replayable {
		return &d, nil
	}
	codec, err := core.LookupCodec(d.Codec)
	if err == nil {
		var v any
		if err = codec.Unmarshal(d.Data, &v); err == nil {
			d.Record = v
		}
	}
	if err != nil {
		d.DecodeError = err.Error()
	}
	return &d, nil
}

// ParseDeadLetter reads a dead letter from the fields of its stream entry
// id. Fields it does not know are ignored; missing ones stay zero.
func ParseDeadLetter(id string, fields map[string]any) DeadLetter {
	str := func(f string) string { s, _ := fields[f].(string); return s }
	d := DeadLetter{ID: id, EntryID: str(deadID), Error: str(deadError), Key: str(core.FieldKey), Codec: str(core.FieldCodec)}
	d.Partition, _ = strconv.Atoi(str(deadPartition))
	if t, err := time.Parse(time.RFC3339Nano, str(deadTime)); err == nil {
		d.Time = &t
	}
	if n, err := strconv.ParseInt(str(deadDeliveries), 10, 64); err == nil {
		d.Attempts = &n
	}
	data, hasData := fields[core.FieldData].(string)
	d.Data = []byte(data)
	d.Replayable = hasData && d.Codec != ""
	for f, v := range fields {
		if name, ok := strings.CutPrefix(f, core.HeaderField); ok {
			if d.Headers == nil {
				d.Headers = map[string]string{}
			}
			d.Headers[name], _ = v.(string)
		}
	}
	return d
}

// validID reports whether s is a full stream entry ID ("ms-seq").
func validID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	_, err1 := strconv.ParseUint(ms, 10, 64)
	_, err2 := strconv.ParseUint(seq, 10, 64)
	return ok && err1 == nil && err2 == nil
}

// clip cuts s to at most n bytes at a UTF-8 boundary and marks the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// deadKeys returns the dead-letter key of each processor of stream.
func (i *Inspector) deadKeys(stream string, procs []processorDef) []string {
	out := make([]string, len(procs))
	for k, pd := range procs {
		out[k] = i.k.DeadLetter(stream, pd.Processor)
	}
	return out
}
