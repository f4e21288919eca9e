package rdb

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A windowed table's hash per partition holds one field per window, named
// "w", the window's start, "/" and the key (see stream/window.go); the
// writes go with the acknowledgements, in CommitTables.

// WindowScan returns the fields and values, alternating, of the windows of
// key in the windowed table hash hash: every page of HSCAN MATCH
// "w*/KEY" (key's glob characters escaped). The caller checks each field's
// key: the pattern also matches a key ending with "/KEY".
func WindowScan(ctx context.Context, c redis.UniversalClient, hash, key string) ([]string, error) {
	match := "w*/" + globEscape(key)
	var out []string
	var cursor uint64
	for {
		kv, next, err := c.HScan(ctx, hash, cursor, match, 500).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, kv...)
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// globEscape escapes the characters a Redis glob pattern gives a meaning.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
