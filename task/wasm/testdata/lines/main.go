// Command lines is a test handler speaking leat's JSON-lines protocol: it
// counts words, and misbehaves on request (see behave).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// version is set with -ldflags "-X main.version=...".
var version = "v1"

type payload struct {
	Text    string `json:"text"`
	Loop    bool   `json:"loop"`
	AllocMB int    `json:"alloc_mb"`
	Panic   bool   `json:"panic"`
	Fail    string `json:"fail"`
	Retry   *bool  `json:"retry"`
	Snooze  int    `json:"snooze"`
	Env     string `json:"env"`
	File    string `json:"file"`
	WaitFor string `json:"wait_for"`
}

var hold [][]byte

func main() {
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	emit(map[string]any{"status": "ready"})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for in.Scan() {
		var req struct {
			TaskID  string          `json:"task_id"`
			Payload json.RawMessage `json:"payload"`
			Attempt int             `json:"attempt"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			continue
		}
		var p payload
		_ = json.Unmarshal(req.Payload, &p)
		fmt.Fprintf(os.Stderr, "counting task %s attempt %d\n", req.TaskID, req.Attempt)
		if p.WaitFor != "" {
			for {
				if _, err := os.Stat(p.WaitFor); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
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
			m := map[string]any{"task_id": req.TaskID, "error": p.Fail}
			if p.Retry != nil {
				m["retry"] = *p.Retry
			}
			emit(m)
			continue
		case p.Snooze > 0:
			emit(map[string]any{"task_id": req.TaskID, "snooze": p.Snooze})
			continue
		case p.Env != "":
			emit(map[string]any{"task_id": req.TaskID, "result": os.Getenv(p.Env)})
			continue
		case p.File != "":
			b, err := os.ReadFile(p.File)
			if err != nil {
				emit(map[string]any{"task_id": req.TaskID, "error": err.Error(), "retry": false})
			} else {
				emit(map[string]any{"task_id": req.TaskID, "result": string(b)})
			}
			continue
		}
		n := len(strings.Fields(p.Text))
		emit(map[string]any{"task_id": req.TaskID, "progress": 50})
		emit(map[string]any{"task_id": req.TaskID, "partial": map[string]any{"words": n}})
		emit(map[string]any{"task_id": req.TaskID, "result": map[string]any{"words": n, "version": version}})
	}
}
