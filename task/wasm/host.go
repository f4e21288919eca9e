package wasm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/leatdev/leat/task"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// hostModule is the name of the module of functions leat offers its
// modules besides WASI: progress(ptr, len) and partial(ptr, len), whose
// bytes are a JSON value reported as the running task's progress or
// partial result (a reactor's way; a lines module writes lines).
const hostModule = "leat"

// callKey is the context key of the call a reactor's execute runs.
type callKey struct{}

// instantiateHost offers the host module to the modules of rt.
func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	report := func(kind string) func(ctx context.Context, m api.Module, ptr, size uint32) {
		return func(ctx context.Context, m api.Module, ptr, size uint32) {
			c, _ := ctx.Value(callKey{}).(*call)
			if c == nil {
				return
			}
			b, ok := m.Memory().Read(ptr, size)
			if !ok || size > MaxLine {
				c.logger.Warn("wasm module reported "+kind+" outside its memory: ignored", "task", c.req.TaskID)
				return
			}
			if !json.Valid(b) {
				c.logger.Warn("wasm module reported "+kind+" that is not JSON: ignored", "task", c.req.TaskID, "value", cut(string(b), tailLine))
				return
			}
			c.report(kind, compact(json.RawMessage(append([]byte(nil), b...))))
		}
	}
	_, err := rt.NewHostModuleBuilder(hostModule).
		NewFunctionBuilder().WithFunc(report(task.KindProgress)).Export("progress").
		NewFunctionBuilder().WithFunc(report(task.KindPartial)).Export("partial").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("wasm: host module: %w", err)
	}
	return nil
}
