package core

import "errors"

var (
	// ErrUnknownCodec is returned when an entry names a codec this reader
	// does not know.
	ErrUnknownCodec = errors.New("stream: unknown codec")
	// ErrMalformedEntry is returned for a stream entry that lacks the fields
	// of leat's entry layout.
	ErrMalformedEntry = errors.New("stream: malformed entry")
	// ErrEncode wraps every error that happens while encoding records for
	// sending; nothing was sent when it is returned.
	ErrEncode = errors.New("stream: encode")
	// ErrConflict is returned when a stream is declared twice with different
	// settings, or when the registry in Redis holds a definition with other
	// routing (partition count or key field).
	ErrConflict = errors.New("stream: conflicting definition")
	// ErrUnknownStream is returned when the registry holds no definition of a
	// stream.
	ErrUnknownStream = errors.New("stream: unknown stream")
	// ErrFull is returned by a send to a stream declared to refuse,
	// rather than trim, entries its processors have not processed.
	ErrFull = errors.New("stream: partition full of unprocessed entries")
)
