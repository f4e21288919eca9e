// Package scripts holds leat's Lua scripts and a typed Go wrapper for each.
// Every script file starts with a header naming its KEYS, ARGV and return
// value; the wrappers repeat it at the call site.
package scripts

import (
	"context"
	_ "embed"
	"errors"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed register_stream.lua
	registerStreamSrc string
	registerStream    = redis.NewScript(registerStreamSrc)
)

// RegisterStream writes def (JSON) for stream into the registry hash unless
// the registry holds a definition with another partition count or key field.
// It returns the conflicting definition and false in that case.
//
// KEYS: registry. ARGV: stream, def, partitions, keyField.
func RegisterStream(ctx context.Context, c redis.Scripter, registry, stream, def string, partitions int, keyField string) (conflict string, ok bool, err error) {
	v, err := registerStream.Run(ctx, c, []string{registry}, stream, def, partitions, keyField).Text()
	if errors.Is(err, redis.Nil) {
		return "", true, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, false, nil
}
