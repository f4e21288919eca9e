package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxHeaderBytes bounds a task's headers, as the JSON object they are kept
// in.
const MaxHeaderBytes = 8 << 10

// Headers gives the task headers: string pairs carried beside its payload
// to every attempt's middleware (middleware.TaskRun.Headers) and handler
// (Task.Headers), and shown by Info. Trace context goes here, for the
// middleware.TaskTracing middleware:
//
//	q.Enqueue(ctx, p, task.Headers(middleware.InjectTrace(ctx, nil)))
//
// Names are case-sensitive and not empty; names and values are UTF-8 text;
// the whole, as JSON, is at most MaxHeaderBytes. Several Headers options
// merge, the last winning for a name. Empty headers are none.
func Headers(h map[string]string) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if len(h) == 0 {
			return nil
		}
		all := map[string]string{}
		if len(s.headers) > 0 {
			if err := json.Unmarshal(s.headers, &all); err != nil {
				return err
			}
		}
		for k, v := range h {
			if k == "" {
				return errors.New("a header name is empty")
			}
			if !utf8.ValidString(k) {
				return fmt.Errorf("header name %q is not UTF-8", k)
			}
			if !utf8.ValidString(v) {
				return fmt.Errorf("header %q: value %q is not UTF-8", k, v)
			}
			all[k] = v
		}
		b, err := json.Marshal(all)
		if err != nil {
			return err
		}
		if len(b) > MaxHeaderBytes {
			return fmt.Errorf("headers take %d bytes as JSON, over the %d allowed", len(b), MaxHeaderBytes)
		}
		s.headers = b
		return nil
	})
}

// decodeHeaders returns the headers a task was enqueued with (nil: none).
func decodeHeaders(b []byte) (map[string]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("task headers: %w", err)
	}
	return h, nil
}
