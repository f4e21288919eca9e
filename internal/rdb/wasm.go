package rdb

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// WebAssembly module registry (package task/wasm). Every key shares the
// hash tag {app:wasm}, so the registry's scripts touch one Cluster slot.
//
//	PREFIX:wasm:{app:wasm}:names   hash: name -> its current version (JSON)
//	PREFIX:wasm:{app:wasm}:v:NAME  hash: version number -> version (JSON)
//	PREFIX:wasm:{app:wasm}:m:HASH  string: a module's bytes, by SHA-256
//	PREFIX:wasm:{app:wasm}:refs    hash: SHA-256 -> versions referring to it
//	PREFIX:wasm:{app:wasm}:seq     hash: name -> its last version number
//
// None has a TTL: a module stays until its name is removed (WasmRemove).
type WasmKeys struct{ base string }

// NewWasmKeys returns the registry's keys in key space s.
func NewWasmKeys(s KeySpace) WasmKeys {
	return WasmKeys{base: s.Prefix + ":wasm:{" + s.App + ":wasm}:"}
}

func (k WasmKeys) names() string               { return k.base + "names" }
func (k WasmKeys) versions(name string) string { return k.base + "v:" + name }
func (k WasmKeys) module(hash string) string   { return k.base + "m:" + hash }
func (k WasmKeys) refs() string                { return k.base + "refs" }
func (k WasmKeys) seq() string                 { return k.base + "seq" }

var (
	//go:embed wasm_put.lua
	wasmPutSrc    string
	wasmPutScript = redis.NewScript(Describe("wasm put", wasmPutSrc))

	//go:embed wasm_rm.lua
	wasmRmSrc    string
	wasmRmScript = redis.NewScript(Describe("wasm rm", wasmRmSrc))
)

// WasmPut stores module as a new version of name (wasm_put.lua): meta is
// the version as a JSON object without its "version", holding the
// module's "hash" (the key of its bytes), "contract" and "reusable". It
// returns the version's JSON, and whether it is new (false: the current
// version was the same, and stays).
func WasmPut(ctx context.Context, c redis.Scripter, k WasmKeys, name, hash, meta string, module []byte) (version string, created bool, err error) {
	res, err := wasmPutScript.Run(ctx, c,
		[]string{k.names(), k.versions(name), k.module(hash), k.refs(), k.seq()},
		name, meta, module).Slice()
	if err != nil {
		return "", false, err
	}
	if len(res) != 2 {
		return "", false, fmt.Errorf("wasm put: unexpected reply %v", res)
	}
	n, _ := res[0].(int64)
	v, _ := res[1].(string)
	return v, n == 1, nil
}

// WasmCurrent returns the current version of name (JSON), or redis.Nil.
func WasmCurrent(ctx context.Context, c redis.Cmdable, k WasmKeys, name string) (string, error) {
	return c.HGet(ctx, k.names(), name).Result()
}

// WasmNames returns the current version of every name (JSON by name).
func WasmNames(ctx context.Context, c redis.Cmdable, k WasmKeys) (map[string]string, error) {
	return c.HGetAll(ctx, k.names()).Result()
}

// WasmVersions returns the versions of name (JSON by version number).
func WasmVersions(ctx context.Context, c redis.Cmdable, k WasmKeys, name string) (map[string]string, error) {
	return c.HGetAll(ctx, k.versions(name)).Result()
}

// WasmModule returns the bytes of the module of content hash hash, or
// redis.Nil.
func WasmModule(ctx context.Context, c redis.Cmdable, k WasmKeys, hash string) ([]byte, error) {
	return c.Get(ctx, k.module(hash)).Bytes()
}

// ErrWasmChanged is WasmRemove's when the name's versions changed since
// they were read.
var ErrWasmChanged = errors.New("wasm registry: versions changed meanwhile")

// WasmRemove removes name and its versions (wasm_rm.lua), given the
// content hash of each version as read just before; the modules no other
// version refers to go too. It returns the number of versions removed, or
// ErrWasmChanged when a version was added or removed meanwhile.
func WasmRemove(ctx context.Context, c redis.Scripter, k WasmKeys, name string, hashes []string) (int, error) {
	ks := []string{k.names(), k.versions(name), k.refs()}
	args := []any{name, len(hashes)}
	for _, h := range hashes {
		ks = append(ks, k.module(h))
		args = append(args, h)
	}
	n, err := wasmRmScript.Run(ctx, c, ks, args...).Int()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, ErrWasmChanged
	}
	return n, nil
}
