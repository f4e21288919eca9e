package wasm

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/leatdev/leat/task"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// reactor is an instance of a reactor module. Its output lines go to the
// log of the call it runs.
type reactor struct {
	mod            api.Module
	alloc, execute api.Function
	cur            atomic.Pointer[call]
	stdout, stderr *lineWriter
}

// newReactor instantiates cm, running its _initialize when it exports one;
// what that writes goes to c's log.
func newReactor(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule, sb *Sandbox, c *call) (*reactor, error) {
	r := &reactor{}
	r.cur.Store(c)
	defer r.cur.Store(nil)
	r.stdout = &lineWriter{max: task.LogLineMax, onLine: r.line}
	r.stderr = &lineWriter{max: task.LogLineMax, onLine: r.line}
	mc := sb.moduleConfig().WithStdout(r.stdout).WithStderr(r.stderr)
	if _, ok := cm.ExportedFunctions()["_initialize"]; ok {
		mc = mc.WithStartFunctions("_initialize")
	}
	mod, err := rt.InstantiateModule(ctx, cm, mc)
	r.stdout.end()
	r.stderr.end()
	if err != nil {
		return nil, c.failure(ctx, "while initialising", err)
	}
	r.mod, r.alloc, r.execute = mod, mod.ExportedFunction("alloc"), mod.ExportedFunction("execute")
	return r, nil
}

func (r *reactor) line(line []byte, tooLong bool) {
	if c := r.cur.Load(); c != nil {
		c.outputLine(line, tooLong)
	}
}

// run calls execute on c's payload; ok says whether the instance can run
// another task.
func (r *reactor) run(ctx context.Context, c *call) (ok bool) {
	r.cur.Store(c)
	defer func() {
		r.stdout.end()
		r.stderr.end()
		r.cur.Store(nil)
	}()
	payload := c.req.Payload
	res, err := r.alloc.Call(ctx, uint64(len(payload)))
	if err != nil {
		c.answer(nil, c.failure(ctx, "in alloc", err))
		return false
	}
	ptr := uint32(res[0])
	if !r.mod.Memory().Write(ptr, payload) {
		c.answer(nil, fmt.Errorf("wasm module's alloc(%d) returned %d, outside its memory of %d bytes", len(payload), ptr, r.mod.Memory().Size()))
		return false
	}
	res, err = r.execute.Call(context.WithValue(ctx, callKey{}, c), uint64(ptr), uint64(len(payload)))
	if err != nil {
		c.answer(nil, c.failure(ctx, "in execute", err))
		return false
	}
	optr, olen := uint32(res[0]>>32), uint32(res[0])
	if olen > MaxLine {
		c.answer(nil, task.SkipRetry(fmt.Errorf("%w: execute returned %d bytes, over %d", ErrLineTooLong, olen, MaxLine)))
		return false
	}
	out, inMemory := r.mod.Memory().Read(optr, olen)
	if !inMemory {
		c.answer(nil, task.SkipRetry(fmt.Errorf("wasm module's execute returned %d bytes at %d, outside its memory of %d bytes", olen, optr, r.mod.Memory().Size())))
		return false
	}
	m, err := decode(out) // decode copies what it keeps
	if err != nil {
		c.answer(nil, task.SkipRetry(fmt.Errorf(`wasm module's execute returned %q, not an envelope such as {"result": ...} or {"error": "...", "retry": false}: %v`, cut(string(out), tailLine), err)))
		return true
	}
	c.answer(outcome(m))
	return true
}

func (r *reactor) alive() bool { return !r.mod.IsClosed() }

func (r *reactor) close(ctx context.Context) { _ = r.mod.Close(ctx) }
