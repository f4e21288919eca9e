package core

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Entry layout. Every entry leat writes to a partition stream has these fields,
// in this order:
//
//	key    the partition key as sent (bytes, UTF-8 for string keys)
//	codec  the codec name, e.g. "msgpack", "json", "msgpack+zstd"
//	data   the encoded record
//	h:NAME one field per header, e.g. "h:traceparent"
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

// Entry is one raw entry of a partition stream: the untyped form of an event.
type Entry struct {
	ID        string
	Partition int
	Key       []byte
	Codec     string
	Data      []byte
	Headers   Headers
}

// xaddArgs returns the command XADD key MAXLEN ~ size * <fields of e>.
func (e *Entry) xaddArgs(key, size string) []any {
	vals := make([]any, 0, 12+2*len(e.Headers))
	vals = append(vals, "XADD", key, "MAXLEN", "~", size, "*")
	return e.appendFields(vals)
}

// appendFields appends the field, value list of e to vals.
func (e *Entry) appendFields(vals []any) []any {
	vals = append(vals, FieldKey, e.Key, FieldCodec, e.Codec, FieldData, e.Data)
	if len(e.Headers) > 0 {
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			vals = append(vals, HeaderField+k, e.Headers[k])
		}
	}
	return vals
}

// ParseEntry reads an entry from the field map of a stream message. It fails
// when the codec or data field is missing.
func ParseEntry(id string, partition int, fields map[string]any) (Entry, error) {
	p := entryParser{e: Entry{ID: id, Partition: partition}}
	for k, v := range fields {
		if err := p.field(k, v); err != nil {
			return p.e, err
		}
	}
	return p.done()
}

// ParseFieldBytes reads an entry from the flat field, value, field,
// value... list of a stream message read from a raw reply
// (scripts.EachRawEntry). It fails when the codec or data field is missing.
// The entry's Key and Data are the slices given, not copies, so reading an
// entry costs no allocation unless it has headers.
func ParseFieldBytes(id string, partition int, fields [][]byte) (Entry, error) {
	p := entryParser{e: Entry{ID: id, Partition: partition}}
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
	if !p.hasData || !p.hasCodec {
		return p.e, fmt.Errorf("entry %s: %w (fields %q and %q are required)", p.e.ID, ErrMalformedEntry, FieldCodec, FieldData)
	}
	return p.e, nil
}
