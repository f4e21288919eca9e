package cmd

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// quoteTerm returns s safe for a terminal, as redis-cli quotes: printable
// UTF-8 as is, and the rest escaped, so that text a handler wrote (its
// logs, error, result) can neither move the cursor, clear or retitle the
// screen, nor forge a row: \n, \r and \t, \xNN for bytes that are not
// UTF-8 and for the other C0 controls and DEL, \u and \U for the C1
// controls and the invisible format characters (bidirectional overrides,
// zero-width marks) that could hide text.
func quoteTerm(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPrintable reports whether s is printable UTF-8 alone.
func isPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
