package config

import (
	"fmt"
	"strings"
)

// A FieldError is one mistake of a file: where it is and what is wrong.
type FieldError struct {
	File string // the file's name, as given to Load or Parse
	Line int    // 1-based; 0 when the mistake has no line (an empty file)
	Path string // the field, dotted: "queues.words.retries"; "" for the whole file
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Path != "" {
		b.WriteString(": " + e.Path)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Errors are every mistake found in a file, in the order of its lines. Load
// and Parse return them all at once, so one run shows what to fix.
type Errors []*FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}
