package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MessagePack's str type is UTF-8 text, but the Go encoder writes a Go
// string's bytes as they are: a string that is not UTF-8 would reach a
// reader in another language as a decoding error, or as other text (bad
// bytes replaced). So the msgpack codec refuses such a record at the door,
// as the JSON codec does; bytes that are not text belong in a []byte, which
// msgpack writes as bin.

// errMsgpackMalformed is returned by CheckMsgpackText for bytes that are
// not one whole MessagePack value as an encoder writes it.
var errMsgpackMalformed = errors.New("msgpack: malformed value")

// CheckMsgpackText returns an error naming the first string (a value or a
// map key, however deep) of the MessagePack value b whose bytes are not
// UTF-8. It walks b once, header by header, reading no more than the
// headers and the strings' bytes.
func CheckMsgpackText(b []byte) error {
	for i := 0; i < len(b); {
		c := b[i]
		i++
		switch {
		case c <= 0x9f || c >= 0xe0: // fixints; fixmap and fixarray, whose items follow
			continue
		case c <= 0xbf: // fixstr, the usual string: checked here
			n := int(c & 0x1f)
			if n > len(b)-i {
				return errMsgpackMalformed
			}
			str := b[i : i+n]
			i += n
			for _, x := range str {
				if x >= utf8.RuneSelf { // not ASCII: check it all
					if err := checkText(str); err != nil {
						return err
					}
					break
				}
			}
			continue
		}
		var n int    // bytes after the header: a string's when str, else skipped
		var size int // bytes of a length field
		switch c {
		case 0xc0, 0xc2, 0xc3: // nil, false, true
			continue
		case 0xc4, 0xd9: // bin 8, str 8
			size = 1
		case 0xc5, 0xda: // bin 16, str 16
			size = 2
		case 0xc6, 0xdb: // bin 32, str 32
			size = 4
		case 0xc7: // ext 8: length, type
			size, n = 1, 1
		case 0xc8:
			size, n = 2, 1
		case 0xc9:
			size, n = 4, 1
		case 0xca, 0xce, 0xd2: // float 32, uint 32, int 32
			n = 4
		case 0xcb, 0xcf, 0xd3: // float 64, uint 64, int 64
			n = 8
		case 0xcc, 0xd0: // uint 8, int 8
			n = 1
		case 0xcd, 0xd1: // uint 16, int 16
			n = 2
		case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type, data
			n = 1 + 1<<(c-0xd4)
		case 0xdc, 0xde: // array 16, map 16: their items follow
			size, n = 2, -1
		case 0xdd, 0xdf: // array 32, map 32
			size, n = 4, -1
		default: // 0xc1, never used
			return errMsgpackMalformed
		}
		if size > 0 {
			if len(b)-i < size {
				return errMsgpackMalformed
			}
			length := 0
			switch size {
			case 1:
				length = int(b[i])
			case 2:
				length = int(binary.BigEndian.Uint16(b[i:]))
			case 4:
				length = int(binary.BigEndian.Uint32(b[i:]))
			}
			i += size
			if n < 0 {
				continue // a container's count
			}
			n += length
		}
		if n > len(b)-i {
			return errMsgpackMalformed
		}
		if c >= 0xd9 && c <= 0xdb { // str 8, 16, 32
			if err := checkText(b[i : i+n]); err != nil {
				return err
			}
		}
		i += n
	}
	return nil
}

// checkText returns an error when s, a string's bytes, is not UTF-8.
func checkText(s []byte) error {
	if !utf8.Valid(s) {
		return fmt.Errorf("string %.40q is not valid UTF-8 (MessagePack strings are UTF-8 text: "+
			"readers in other languages would fail on it or replace its bad bytes; send bytes as a []byte)", s)
	}
	return nil
}
