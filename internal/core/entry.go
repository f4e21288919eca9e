package core

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/rdb"
)

// Entry layout. An entry leat writes to a partition stream has these fields,
// in this order:
//
//	key    the partition key as sent (bytes, UTF-8 for string keys)
//	codec  the codec name, e.g. "msgpack", "json", "msgpack+zstd", only when
//	       it differs from the stream's entry codec (Definition.EntryCodec)
//	data   the encoded record
//	h:NAME one field per header, e.g. "h:traceparent"
//
// An entry without a codec field is encoded with the stream's entry codec,
// recorded once in the registry. Entries written before the entry codec
// existed carry the codec field on every entry, and read as before. Redis
// stores the field names of a stream node once when its entries share them,
// so every entry without headers costs its key and data bytes and nothing
// else: the codec, the same on every entry, was the one value repeated.
// Shorter field names would save bytes only on entries whose fields differ
// from their node's first entry (headers on some entries and not others:
// 13 bytes an entry when every second one has a header), and would break
// the readers of these names, so the names stay.
//
// Readers ignore fields they do not know, so the layout can grow.
const (
	FieldKey    = "key"
	FieldCodec  = "codec"
	FieldData   = "data"
	HeaderField = "h:"
)

// Headers are string key/value pairs carried beside a record: trace context,
// content type, attempt counts. Names are case-sensitive.
type Headers map[string]string

// CheckHeaders returns what is wrong with h: a name that is empty, or a
// name or value that is not UTF-8 (a reader in another language would fail
// on it, or get other text). Sends and task enqueues refuse such headers.
func CheckHeaders(h map[string]string) error {
	for k, v := range h {
		if k == "" {
			return errors.New("a header name is empty")
		}
		if !utf8.ValidString(k) {
			return fmt.Errorf("header name %.40q is not UTF-8", k)
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("header %.40q: value %.40q is not UTF-8", k, v)
		}
	}
	return nil
}

// Entry is one raw entry of a partition stream: the untyped form of an event.
type Entry struct {
	ID        string
	Partition int
	Key       []byte
	Codec     string
	Data      []byte
	Headers   Headers
}

// xaddArgs returns the command XADD key MAXLEN ~ size * <fields of e>, for
// a stream whose entry codec is entryCodec; key and size are strings, boxed
// by the caller.
func (e *Entry) xaddArgs(key, size any, entryCodec string) []any {
	return e.appendFields(rdb.XAddArgs(key, size, 6+2*len(e.Headers)), entryCodec)
}

// appendFields appends the field, value list of e to vals, for a stream
// whose entry codec is entryCodec: the codec field only when e's codec is
// another one (or entryCodec is "").
func (e *Entry) appendFields(vals []any, entryCodec string) []any {
	vals = append(vals, FieldKey, e.Key)
	if e.Codec != entryCodec || entryCodec == "" {
		vals = append(vals, FieldCodec, e.Codec)
	}
	vals = append(vals, FieldData, e.Data)
	if len(e.Headers) > 0 {
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			vals = append(vals, HeaderField+k, e.Headers[k])
		}
	}
	return vals
}

// ParseEntry reads an entry from the field map of a stream message of a
// stream whose entry codec is entryCodec (Core.EntryCodec), the codec of an
// entry without a codec field. It fails when the data field is missing, or
// the codec field when entryCodec is "".
func ParseEntry(id string, partition int, entryCodec string, fields map[string]any) (Entry, error) {
	p := entryParser{e: Entry{ID: id, Partition: partition}, entryCodec: entryCodec}
	for k, v := range fields {
		if err := p.field(k, v); err != nil {
			return p.e, err
		}
	}
	return p.done()
}

// ParseFieldBytes reads an entry from the flat field, value, field,
// value... list of a stream message read from a raw reply
// (rdb.EachRawEntry), as ParseEntry does. The entry's Key and Data are
// the slices given, not copies, so reading an entry costs no allocation
// unless it has headers.
func ParseFieldBytes(id string, partition int, entryCodec string, fields [][]byte) (Entry, error) {
	p := entryParser{e: Entry{ID: id, Partition: partition}, entryCodec: entryCodec}
	for i := 0; i+1 < len(fields); i += 2 {
		k, v := fields[i], fields[i+1]
		switch {
		case string(k) == FieldKey:
			p.e.Key = v
		case string(k) == FieldCodec:
			p.e.Codec, p.hasCodec = codecName(v), true
		case string(k) == FieldData:
			p.e.Data, p.hasData = v, true
		case bytes.HasPrefix(k, []byte(HeaderField)):
			if p.e.Headers == nil {
				p.e.Headers = Headers{}
			}
			p.e.Headers[string(k[len(HeaderField):])] = string(v)
		}
	}
	return p.done()
}

// codecName returns the codec name b, without allocating for the built-in
// codecs' names.
func codecName(b []byte) string {
	for _, n := range builtinCodecNames {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

var builtinCodecNames = []string{MsgPack.Name(), JSON.Name()}

type entryParser struct {
	e                 Entry
	entryCodec        string
	hasData, hasCodec bool
}

func (p *entryParser) field(k string, v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("entry %s: field %q is not a string", p.e.ID, k)
	}
	switch {
	case k == FieldKey:
		p.e.Key = []byte(s)
	case k == FieldCodec:
		p.e.Codec, p.hasCodec = s, true
	case k == FieldData:
		p.e.Data, p.hasData = []byte(s), true
	case strings.HasPrefix(k, HeaderField):
		if p.e.Headers == nil {
			p.e.Headers = Headers{}
		}
		p.e.Headers[k[len(HeaderField):]] = s
	}
	return nil
}

func (p *entryParser) done() (Entry, error) {
	if !p.hasData {
		return p.e, fmt.Errorf("entry %s: %w (field %q is required)", p.e.ID, ErrMalformedEntry, FieldData)
	}
	if !p.hasCodec {
		if p.entryCodec == "" {
			return p.e, fmt.Errorf("entry %s: %w (no field %q, and the stream records no entry codec)", p.e.ID, ErrMalformedEntry, FieldCodec)
		}
		p.e.Codec = p.entryCodec
	}
	return p.e, nil
}
