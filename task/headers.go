package task

import (
	"encoding/json"
	"fmt"

	streamcore "github.com/leatdev/leat/internal/core"
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
		if err := streamcore.CheckHeaders(h); err != nil {
			return err
		}
		for k, v := range h {
			if s.headers == nil {
				s.headers = map[string]string{}
			}
			s.headers[k] = v
		}
		return nil
	})
}

// encodeHeaders returns the JSON object headers are kept in (nil: none),
// or what is wrong with them.
func encodeHeaders(h map[string]string) ([]byte, error) {
	if len(h) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxHeaderBytes {
		return nil, fmt.Errorf("headers take %d bytes as JSON, over the %d allowed", len(b), MaxHeaderBytes)
	}
	return b, nil
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
