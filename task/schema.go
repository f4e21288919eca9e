package task

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/declared"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/schema"
	"github.com/leatdev/leat/internal/topology"
)

// A queue's schema in the registry: a program that declares a queue with a
// payload type records the JSON that type decodes (package
// internal/schema) with the queue's definition, so that a queue looked up
// in a program without the type (the standalone CLI, leat serve) refuses
// the payloads the handlers would not decode. Each registration replaces
// it; one whose payload type takes any JSON (json.RawMessage) removes it.

func init() {
	declared.QueueCheck = func(q any) declared.PayloadCheck {
		if q, ok := q.(*Queue[json.RawMessage, json.RawMessage]); ok {
			return q.check
		}
		return nil
	}
}

// payloadSchema returns the schema of payloads of type P, encoded, or nil
// when P takes any JSON.
func payloadSchema[P any]() ([]byte, error) {
	s := schema.Of(reflect.TypeFor[P](), schema.Options{Decoder: schema.DecoderJSON})
	if s == nil {
		return nil, nil
	}
	return s.Marshal()
}

// writeSchema records the queue's payload schema in the registry (or
// removes the one there when its payload type takes any JSON).
func (q *core) writeSchema(ctx context.Context) error {
	err := rdb.SetSchema(ctx, q.rdb, q.ks.Schemas(), rdb.SchemaField(rdb.SchemaQueue, q.name), q.schema)
	if err != nil && !topology.Denied(err) {
		return fmt.Errorf("task queue %q: record the payload schema: %w", q.name, err)
	}
	return nil
}

// recordedWithSchema returns the options of queue name as recorded in
// Redis and the payload schema recorded with them (nil: none), in one
// round trip. A schema the registry holds that is not one a program
// writes is an error: refusing every enqueue beats letting them all in.
func recordedWithSchema(ctx context.Context, a *app.App, name string) ([]Option, *schema.Schema, error) {
	cfg := a.Config()
	ks := rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)
	v, ok, raw, err := rdb.DefinitionAndSchema(ctx, a.Client(), ks.TaskQueues(), name, ks.Schemas(), rdb.SchemaField(rdb.SchemaQueue, name))
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownQueue, name)
	}
	opts, err := definitionOptions([]byte(v))
	if err != nil {
		return nil, nil, fmt.Errorf("task queue %q: definition: %w", name, err)
	}
	if raw == nil {
		return opts, nil, nil
	}
	s, err := schema.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("task queue %q: %w", name, err)
	}
	return opts, s, nil
}
