package rdb

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownProcessor is returned when a processor name matches no
// processor, or more than one.
var ErrUnknownProcessor = errors.New("unknown processor")

// MatchProcessor returns the full name among known ("stream/processor"
// names) that name designates: itself, or the only one whose processor part
// is name. It fails with ErrUnknownProcessor when there is none, or more
// than one.
func MatchProcessor(name string, known []string) (string, error) {
	if s, p, full := strings.Cut(name, "/"); full {
		if err := errors.Join(CheckName("stream", s), CheckName("processor", p)); err != nil {
			return "", fmt.Errorf("%w: %w", ErrUnknownProcessor, err)
		}
		if slices.Contains(known, name) {
			return name, nil
		}
	} else {
		if err := CheckName("processor", name); err != nil {
			return "", fmt.Errorf("%w: %w", ErrUnknownProcessor, err)
		}
		var match []string
		for _, k := range known {
			if strings.HasSuffix(k, "/"+name) {
				match = append(match, k)
			}
		}
		switch {
		case len(match) == 1:
			return match[0], nil
		case len(match) > 1:
			return "", fmt.Errorf("%w: processor name %q is ambiguous: use STREAM/NAME (%s)", ErrUnknownProcessor, name, strings.Join(match, ", "))
		}
	}
	if len(known) == 0 {
		return "", fmt.Errorf("%w %q: none is known", ErrUnknownProcessor, name)
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownProcessor, name, strings.Join(known, ", "))
}
