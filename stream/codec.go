package stream

import "github.com/leatdev/leat/internal/core"

// A Codec turns records into entry payloads and back. Implementations must be
// safe for concurrent use. Name is recorded in the stream's registry
// definition (its entry codec), or on an entry of another codec (field
// "codec"), so a reader, in Go or another language, knows how to decode it.
type Codec interface {
	// Name is the name entries and definitions record the codec by,
	// e.g. "msgpack" or "msgpack+zstd".
	Name() string
	// Marshal encodes v, a record or a pointer to one, into a payload.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes a payload into v, a pointer to a record.
	Unmarshal(data []byte, v any) error
}

// A Compressor compresses entry payloads. Implementations must be safe for
// concurrent use.
type Compressor interface {
	// Name is the compressor's name, appended to its codec's name after
	// a '+' (e.g. "zstd").
	Name() string
	// Compress returns src compressed.
	Compress(src []byte) ([]byte, error)
	// Decompress returns the payload src was compressed from.
	Decompress(src []byte) ([]byte, error)
}

// Codecs and compressors.
var (
	// MsgPack is the default codec. Struct fields are named by their
	// `msgpack` tag, else their `json` tag, else their Go name. A record
	// with a string (a value or a map key) that is not UTF-8 is refused:
	// MessagePack strings are UTF-8 text, and readers in other languages
	// would fail on it or replace its bad bytes. Its send fails with
	// ErrEncode and sends nothing; send bytes that are not text as a
	// []byte (msgpack bin). Records that are structs whose fields are all
	// strings, bools, integers or floats (predeclared types, no embedded
	// structs) are encoded and decoded without reflection, two to three
	// times as fast, into and from the same bytes; a record type that
	// codes itself (msgpack.CustomEncoder, encoding.TextMarshaler and the
	// like) or has an extension registered with msgpack.RegisterExt
	// before the stream is declared is coded by the library, as any other.
	MsgPack Codec = core.MsgPack
	// JSON encodes records with encoding/json. A record with a string that
	// is not UTF-8 is refused (encoding/json would replace its bad bytes
	// with U+FFFD, so readers would get other text): its send fails with
	// ErrEncode and sends nothing.
	JSON Codec = core.JSON
	// Gzip compresses with compress/gzip at the default level.
	Gzip Compressor = core.Gzip
	// Zstd compresses with Zstandard at the default level.
	Zstd Compressor = core.Zstd
)

// Compressed returns c with its payloads compressed by z; its name is
// c's name, "+", z's name (e.g. "msgpack+zstd").
func Compressed(c Codec, z Compressor) Codec { return core.Compressed(c, z) }

// Headers are string key/value pairs carried beside a record: trace context,
// content type, attempt counts. Names are case-sensitive.
type Headers map[string]string

// Definition is what the registry in Redis records about a stream, so that
// tools without the app's Go code (the leat CLI, programs in other languages)
// can route and decode its entries. It is recorded as JSON, with the
// field names of its tags.
type Definition struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	// KeyField is the encoded name of the record field holding the partition
	// key. It is empty when the key is computed by a Go function.
	KeyField string `json:"key_field,omitempty"`
	// Size is the approximate maximum length of each partition (XADD MAXLEN ~).
	Size int64 `json:"size"`
	// Codec is the name of the codec the stream's latest declaration
	// encodes records with, e.g. "msgpack+zstd".
	Codec string `json:"codec"`
	// EntryCodec is the codec of the stream's entries that carry no codec
	// field. The stream's first registration sets it to its codec and later
	// ones keep it: after a codec change, new entries carry their codec and
	// the entries written before still decode.
	EntryCodec string `json:"entry_codec,omitempty"`
	// WhenFull is what a send does when retention would trim entries a
	// processor has not processed (see WhenFull).
	WhenFull Full `json:"when_full,omitempty"`
}

// definitionOf returns the stream package's copy of d.
func definitionOf(d core.Definition) Definition {
	return Definition{
		Name: d.Name, Partitions: d.Partitions, KeyField: d.KeyField, Size: d.Size,
		Codec: d.Codec, EntryCodec: d.EntryCodec, WhenFull: Full(d.WhenFull),
	}
}

// PartitionOf returns the partition of a key: xxhash64(key) mod partitions.
// The function is stable across versions and languages (XXH64 with seed 0),
// and pinned by a golden test.
func PartitionOf(key []byte, partitions int) int { return core.PartitionOf(key, partitions) }

// KeyBytes returns the bytes a partition key value hashes as: strings as their
// UTF-8 bytes, integers as their decimal string, booleans as "true"/"false",
// byte slices as they are, and types implementing fmt.Stringer as their string.
// Other types are an error.
func KeyBytes(v any) ([]byte, error) { return core.KeyBytes(v) }

// Defaults of a stream declaration that does not set them (the app's
// Config can change them).
const (
	DefaultPartitions = core.DefaultPartitions
	DefaultSize       = core.DefaultSize
)

// Errors.
var (
	// ErrEncode wraps every error that happens while encoding records for
	// sending; nothing was sent when it is returned.
	ErrEncode = core.ErrEncode
	// ErrConflict is returned when a stream is declared twice with
	// different settings, or when the registry in Redis holds a definition
	// with other routing (partition count or key field).
	ErrConflict = core.ErrConflict
	// ErrUnknownCodec is returned when an entry names a codec this reader
	// does not know.
	ErrUnknownCodec = core.ErrUnknownCodec
	// ErrFull is returned by a send to a stream declared WhenFull(Refuse)
	// when a partition has no room without trimming unprocessed entries.
	ErrFull = core.ErrFull
)

// CompareIDs orders stream entry IDs ("ms-seq"): -1 when a comes before b,
// 0 when they are equal, +1 when a comes after b. Within a partition, the
// entries of a key come in ID order: keep the last ID applied beside a
// value to tell an entry seen before (a replay after a reset) from a new one.
func CompareIDs(a, b string) int { return core.CompareIDs(a, b) }
