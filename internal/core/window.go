package core

import (
	"errors"
	"strconv"
	"strings"
)

// A windowed table (stream.Windowed) keeps, in its table hash per
// partition, one field per window, named by WindowField, holding a window
// record (EncodeWindow), beside the partition's event time
// (WindowFieldClock, Unix ms in decimal) and late count (WindowFieldLate,
// decimal). The processor registry records it as a table whose codec name
// is WindowCodecPrefix and its values' codec.
const (
	WindowCodecPrefix = "window:"
	WindowFieldClock  = "t"
	WindowFieldLate   = "l"
)

// WindowField names the field of key's window that starts at start (Unix
// ms): "w", the start in decimal, "/", the key.
func WindowField(start int64, key string) string {
	return "w" + strconv.FormatInt(start, 10) + "/" + key
}

// ParseWindowField returns the start and key a WindowField names.
func ParseWindowField(f string) (start int64, key string, ok bool) {
	if !strings.HasPrefix(f, "w") {
		return 0, "", false
	}
	i := strings.IndexByte(f, '/')
	if i < 0 {
		return 0, "", false
	}
	start, err := strconv.ParseInt(f[1:i], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return start, f[i+1:], true
}

// WindowRec is a window's record: whether it closed, its end (Unix ms,
// exclusive) and its value as the table's codec encoded it.
type WindowRec struct {
	Closed bool
	End    int64
	Data   []byte
}

// EncodeWindow lays r out as one byte ('o' open, 'c' closed), the end as 8
// bytes big-endian, then the value.
func EncodeWindow(r WindowRec) []byte {
	b := make([]byte, 9, 9+len(r.Data))
	b[0] = 'o'
	if r.Closed {
		b[0] = 'c'
	}
	u := uint64(r.End)
	for i := range 8 {
		b[1+i] = byte(u >> (56 - 8*i))
	}
	return append(b, r.Data...)
}

// DecodeWindow reads what EncodeWindow wrote.
func DecodeWindow(b []byte) (WindowRec, error) {
	if len(b) < 9 || (b[0] != 'o' && b[0] != 'c') {
		return WindowRec{}, errors.New("malformed window record")
	}
	var u uint64
	for i := range 8 {
		u = u<<8 | uint64(b[1+i])
	}
	return WindowRec{Closed: b[0] == 'c', End: int64(u), Data: b[9:]}, nil
}
