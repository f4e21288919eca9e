// Package schema describes, in JSON a tool without the Go code can read, the
// JSON a Go type decodes: the fields of its objects as they are encoded, the
// kind of every value, the range of integers and the fields a record must
// have. A program that declares a typed stream or task queue records its
// type's schema in the registry in Redis; the standalone CLI and the HTTP
// API, which hold no Go types, check records and payloads against it before
// writing anything, so they refuse what the stream's processors or the
// queue's handlers would not decode, with an error naming the field.
//
// # What a schema says
//
// A [Type] is one of the kinds below; null is accepted wherever a value is
// (both decoders leave the zero value), except in a required field.
//
//   - object: a Go struct; its fields by encoded name; any other member is
//     refused (the readers refuse unknown fields);
//   - map: a Go map; any member name (or an integer in range, for integer
//     keys), each value of the map's element type;
//   - array: a slice or array (a fixed length for a Go array when the
//     decoder insists on it);
//   - bytes: a base64 string ([]byte);
//   - string (format date-time for time.Time), boolean;
//   - integer: a number with no fraction, from min to max;
//   - number: any number that fits in 32 or 64 bits;
//   - any: whatever JSON (an empty interface, json.RawMessage, a type that
//     decodes itself, or a type met again inside itself);
//   - none: only null (a value the readers cannot decode from JSON at all:
//     a channel, a function, a non-empty interface).
//
// # Decoders
//
// Two readers decode JSON in leat and they differ, so a schema names the one
// its type is read with ([Schema.Decoder]): a stream's JSON input
// ([DecoderStream]) matches member names exactly and takes 12.0 or 1e3 as
// integers; task payloads are decoded by encoding/json ([DecoderJSON]),
// which matches names without regard to case and takes integers written
// with digits only.
//
// A schema checks what it can say; a type that decodes itself
// (UnmarshalJSON) is checked as any value, and the readers remain the last
// word.
package schema
