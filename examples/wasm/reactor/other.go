//go:build !wasip1

package main

import (
	"fmt"
	"os"
)

// main says how to build the reactor: it is a WebAssembly module only.
func main() {
	fmt.Fprintln(os.Stderr, "reactor is a WebAssembly module: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o reactor.wasm .")
	os.Exit(2)
}
