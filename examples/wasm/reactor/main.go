//go:build wasip1

// Command reactor is a task handler of the reactor contract: built with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, it exports alloc
// and execute, and answers {"text": ...} with its word count.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unsafe"
)

var (
	// buffers alloc handed out, kept from the garbage collector until
	// execute reads them.
	buffers = map[uint32][]byte{}
	// answer is execute's last answer: the worker reads it after execute
	// returns, so it must outlive the call.
	answer []byte
)

// alloc returns memory for an input of size bytes.
//
//go:wasmexport alloc
func alloc(size uint32) uint32 {
	b := make([]byte, max(size, 1))
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	buffers[ptr] = b
	return ptr
}

// execute runs a task on its payload, at ptr, and returns its answer's
// pointer (high 32 bits) and length (low 32 bits).
//
//go:wasmexport execute
func execute(ptr, size uint32) uint64 {
	payload := buffers[ptr][:size]
	delete(buffers, ptr)
	var p struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(payload, &p) != nil || p.Text == nil {
		return reply(map[string]any{"error": `payload needs a "text"`, "retry": false})
	}
	fmt.Fprintf(os.Stderr, "counting %d bytes of text\n", len(*p.Text)) // the task's log
	return reply(map[string]any{"result": map[string]int{"words": len(strings.Fields(*p.Text))}})
}

// reply keeps v's encoding as the answer and returns where it is.
func reply(v any) uint64 {
	answer, _ = json.Marshal(v)
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(answer))))<<32 | uint64(len(answer))
}

func main() {}
