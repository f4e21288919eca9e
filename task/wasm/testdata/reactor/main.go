//go:build wasip1

// Command reactor is a test handler of the reactor contract: it counts
// words, and misbehaves on request.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// version is set with -ldflags "-X main.version=...".
var version = "v1"

var (
	inputs = map[uint32][]byte{} // alloc'd buffers, kept until execute reads them
	output []byte                // the last result, kept until the next call
	hold   [][]byte
	calls  int
)

//go:wasmimport leat progress
func progress(ptr unsafe.Pointer, size uint32)

// report reports v as the task's progress.
func report(v any) {
	b, _ := json.Marshal(v)
	progress(unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b)))
}

//go:wasmexport alloc
func alloc(size uint32) uint32 {
	b := make([]byte, size+1)
	p := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	inputs[p] = b
	return p
}

//go:wasmexport execute
func execute(ptr, size uint32) uint64 {
	in := inputs[ptr][:size]
	delete(inputs, ptr)
	calls++
	var p struct {
		Text    string `json:"text"`
		Loop    bool   `json:"loop"`
		AllocMB int    `json:"alloc_mb"`
		Panic   bool   `json:"panic"`
		Fail    string `json:"fail"`
		Retry   *bool  `json:"retry"`
		Calls   bool   `json:"calls"`
	}
	if err := json.Unmarshal(in, &p); err != nil {
		return answer(map[string]any{"error": "bad payload: " + err.Error(), "retry": false})
	}
	fmt.Println("reactor got", len(in), "bytes")
	report(map[string]int{"done": 1})
	fmt.Fprintln(os.Stderr, "reactor stderr line")
	switch {
	case p.Loop:
		for {
		}
	case p.AllocMB > 0:
		for i := 0; i < p.AllocMB; i++ {
			b := make([]byte, 1<<20)
			b[0] = 1
			hold = append(hold, b)
		}
	case p.Panic:
		panic("asked to panic")
	case p.Fail != "":
		m := map[string]any{"error": p.Fail}
		if p.Retry != nil {
			m["retry"] = *p.Retry
		}
		return answer(m)
	case p.Calls:
		return answer(map[string]any{"result": calls})
	}
	return answer(map[string]any{"result": map[string]any{"words": len(strings.Fields(p.Text)), "version": version}})
}

func answer(v any) uint64 {
	output, _ = json.Marshal(v)
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(output))))<<32 | uint64(len(output))
}

func main() {}
