// Command lines is a task handler speaking leat's JSON-lines protocol over
// stdin and stdout: it answers {"text": ...} with its word count. The same
// program runs as a child process (leat worker --exec) and, built with
// GOOS=wasip1 GOARCH=wasm, as a sandboxed WebAssembly module (leat worker
// --wasm).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// request is a task as the worker writes it.
type request struct {
	TaskID  string          `json:"task_id"`
	Payload json.RawMessage `json:"payload"`
	Attempt int             `json:"attempt"`
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush() // one line at a time: the worker reads them as they come
	}
	send(map[string]string{"status": "ready"})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "not a request:", err)
			continue
		}
		var p struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(req.Payload, &p) != nil || p.Text == nil {
			send(map[string]any{"task_id": req.TaskID, "error": `payload needs a "text"`, "retry": false})
			continue
		}
		fmt.Fprintf(os.Stderr, "counting the words of task %s (attempt %d)\n", req.TaskID, req.Attempt)
		words := len(strings.Fields(*p.Text))
		send(map[string]any{"task_id": req.TaskID, "progress": map[string]int{"done": 1, "of": 1}})
		send(map[string]any{"task_id": req.TaskID, "result": map[string]int{"words": words}})
	}
}
