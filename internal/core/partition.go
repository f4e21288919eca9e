package core

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// PartitionOf returns the partition of a key: xxhash64(key) mod partitions.
// The function is stable across versions and languages (XXH64 with seed 0),
// and pinned by a golden test.
func PartitionOf(key []byte, partitions int) int {
	if partitions <= 1 {
		return 0
	}
	return int(xxhash.Sum64(key) % uint64(partitions))
}

// KeyBytes returns the bytes a partition key value hashes as: strings as their
// UTF-8 bytes, integers as their decimal string, booleans as "true"/"false",
// byte slices as they are, and types implementing fmt.Stringer as their string.
// Other types are an error.
func KeyBytes(v any) ([]byte, error) {
	switch k := v.(type) {
	case string:
		return []byte(k), nil
	case []byte:
		return k, nil
	case int:
		return strconv.AppendInt(nil, int64(k), 10), nil
	case int64:
		return strconv.AppendInt(nil, k, 10), nil
	case int32:
		return strconv.AppendInt(nil, int64(k), 10), nil
	case uint64:
		return strconv.AppendUint(nil, k, 10), nil
	case uint32:
		return strconv.AppendUint(nil, uint64(k), 10), nil
	case uint:
		return strconv.AppendUint(nil, uint64(k), 10), nil
	case bool:
		return strconv.AppendBool(nil, k), nil
	case fmt.Stringer:
		return []byte(k.String()), nil
	case nil:
		return nil, fmt.Errorf("partition key is nil")
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return []byte(rv.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(nil, rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(nil, rv.Uint(), 10), nil
	case reflect.Bool:
		return strconv.AppendBool(nil, rv.Bool()), nil
	}
	return nil, fmt.Errorf("partition key of type %T is not supported (use a string, an integer or a bool)", v)
}
