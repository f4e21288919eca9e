package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// A Codec turns records into entry payloads and back. Implementations must be
// safe for concurrent use. Name is recorded in the stream's registry
// definition (its entry codec), or on an entry of another codec (field
// "codec"), so a reader, in Go or another language, knows how to decode it.
type Codec interface {
	Name() string
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// MsgPack is the default codec. Struct fields are named by their `msgpack`
// tag, else their `json` tag, else their Go name. A record with a string
// that is not UTF-8 is refused (CheckMsgpackText).
var MsgPack Codec = msgpackCodec{}

// JSON encodes records with encoding/json, refusing a string that is not
// UTF-8 (CheckMarshaled), and raw JSON in a record (json.RawMessage) that
// readers would decode with replacements or by dropping a value
// (CheckJSONText).
var JSON Codec = jsonCodec{}

type msgpackCodec struct{}

func (msgpackCodec) Name() string { return "msgpack" }

func (msgpackCodec) structTags() []string { return msgpackTags }

func (msgpackCodec) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&buf)
	enc.SetCustomStructTag("json")
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := CheckMsgpackText(buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// msgpackReaders pools the byte readers decoders read from.
var msgpackReaders = sync.Pool{New: func() any { return new(bytes.Reader) }}

func (msgpackCodec) Unmarshal(data []byte, v any) error {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	r := msgpackReaders.Get().(*bytes.Reader)
	defer msgpackReaders.Put(r)
	r.Reset(data)
	dec.Reset(r)
	dec.SetCustomStructTag("json")
	if err := dec.Decode(v); err != nil {
		return err
	}
	if r.Len() > 0 {
		return errors.New("msgpack: trailing data after value")
	}
	return nil
}

// batchCodec is a codec that encodes many records faster with one reused
// encoder and buffer than with a Marshal each.
type batchCodec interface {
	newBatch(n int) marshalBatch // for about n records
}

type marshalBatch interface {
	marshal(v any) ([]byte, error)
	close()
}

func (msgpackCodec) newBatch(n int) marshalBatch {
	b := &msgpackBatch{enc: msgpack.GetEncoder(), chunk: batchChunk(n)}
	b.enc.Reset(&b.buf)
	b.enc.SetCustomStructTag("json")
	b.enc.UseCompactInts(true)
	return b
}

// The buffers of a msgpackBatch (and a planBatch): 128 bytes per record of
// the batch, from 1 KB to 64 KB.
const (
	minBatchChunk = 1 << 10
	maxBatchChunk = 64 << 10
)

// batchChunk is the size of the buffers of a batch of n records.
func batchChunk(n int) int { return min(maxBatchChunk, max(minBatchChunk, n*128)) }

// msgpackBatch encodes records one after the other into a buffer; each
// result is a capacity-limited slice of it, so later records never write
// into an earlier one. When less than a quarter of a chunk is left, the next
// record starts a new buffer: growing one would copy the records it holds,
// whose results keep pointing into the old memory, for nothing
// (BenchmarkEncodeAll).
type msgpackBatch struct {
	enc   *msgpack.Encoder
	buf   bytes.Buffer // the encoder writes here (its address is kept)
	chunk int          // capacity of a new buffer
}

func (b *msgpackBatch) marshal(v any) ([]byte, error) {
	if b.buf.Cap()-b.buf.Len() < b.chunk/4 {
		b.buf = bytes.Buffer{} // the results so far keep the old one
		b.buf.Grow(b.chunk)
	}
	start := b.buf.Len()
	if err := b.enc.Encode(v); err != nil {
		b.buf.Truncate(start)
		return nil, err
	}
	end := b.buf.Len()
	out := b.buf.Bytes()[start:end:end]
	if err := CheckMsgpackText(out); err != nil {
		b.buf.Truncate(start)
		return nil, err
	}
	return out, nil
}

func (b *msgpackBatch) close() { msgpack.PutEncoder(b.enc) }

type jsonCodec struct{}

func (jsonCodec) Name() string         { return "json" }
func (jsonCodec) structTags() []string { return jsonTags }
func (jsonCodec) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if err := CheckMarshaled(b, v); err != nil {
		return nil, err
	}
	if err := CheckJSONText(b); err != nil {
		return nil, err
	}
	return b, nil
}
func (jsonCodec) Unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("json: trailing data after value")
	}
	return nil
}

// Compressed wraps c so that payloads are compressed with z. The resulting
// codec's name is c.Name()+"+"+z.Name(), for example "msgpack+zstd".
func Compressed(c Codec, z Compressor) Codec {
	if z == nil {
		return c
	}
	return compressedCodec{c: c, z: z, name: c.Name() + "+" + z.Name()}
}

type compressedCodec struct {
	c    Codec
	z    Compressor
	name string
}

func (cc compressedCodec) Name() string { return cc.name }

func (cc compressedCodec) structTags() []string { return tagsOf(cc.c) }

func (cc compressedCodec) Marshal(v any) ([]byte, error) {
	b, err := cc.c.Marshal(v)
	if err != nil {
		return nil, err
	}
	return cc.z.Compress(b)
}

func (cc compressedCodec) Unmarshal(data []byte, v any) error {
	b, err := cc.z.Decompress(data)
	if err != nil {
		return fmt.Errorf("%s: %w", cc.z.Name(), err)
	}
	return cc.c.Unmarshal(b, v)
}

// LookupCodec returns the built-in codec with the given entry name: "msgpack"
// or "json", optionally followed by "+gzip" or "+zstd". extra codecs (such as
// a stream's own) are matched first by name.
func LookupCodec(name string, extra ...Codec) (Codec, error) {
	for _, c := range extra {
		if c != nil && c.Name() == name {
			return c, nil
		}
	}
	base, comp, hasComp := strings.Cut(name, "+")
	var c Codec
	switch base {
	case "msgpack":
		c = MsgPack
	case "json":
		c = JSON
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownCodec, name)
	}
	if !hasComp {
		return c, nil
	}
	z, err := LookupCompressor(comp)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownCodec, name)
	}
	return Compressed(c, z), nil
}
