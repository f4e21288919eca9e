package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/leatdev/leat/task"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// requestLine returns c's request line, newline included.
func requestLine(c *call) ([]byte, error) {
	line, err := json.Marshal(c.req)
	if err != nil {
		return nil, task.SkipRetry(fmt.Errorf("encode request: %w", err))
	}
	return append(line, '\n'), nil
}

// runLinesOnce runs c on a new instance of a lines module: its stdin holds
// the request line alone, so the module answers it and ends at the end of
// its input.
func runLinesOnce(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule, sb *Sandbox, c *call) {
	line, err := requestLine(c)
	if err != nil {
		c.answer(nil, err)
		return
	}
	stdout := &lineWriter{max: MaxLine, onLine: c.protocolLine}
	stderr := &lineWriter{max: task.LogLineMax, onLine: c.outputLine}
	mc := sb.moduleConfig().WithStdin(bytes.NewReader(line)).WithStdout(stdout).WithStderr(stderr).WithStartFunctions("_start")
	mod, err := rt.InstantiateModule(ctx, cm, mc)
	if mod != nil {
		_ = mod.Close(ctx)
	}
	stdout.end()
	stderr.end()
	if c.answered() {
		return
	}
	var exit *sys.ExitError
	if err == nil || errors.As(err, &exit) && exit.ExitCode() == 0 && ctx.Err() == nil {
		c.answer(nil, fmt.Errorf("wasm module ended without answering task %s%s", c.req.TaskID, c.log.lastLines()))
		return
	}
	c.answer(nil, c.failure(ctx, "before answering", err))
}

// linesInstance is a lines module kept running between tasks (a reusable
// module in a pool): it reads request lines from a pipe, like a handler
// process.
type linesInstance struct {
	cancel context.CancelFunc
	stdin  *io.PipeWriter
	cur    atomic.Pointer[call]
	exited chan struct{} // closed when the module ended
	err    error         // why, once exited is closed
	stdout *lineWriter
	stderr *lineWriter
}

// startLines starts an instance of a lines module that keeps running
// until close.
func startLines(rt wazero.Runtime, cm wazero.CompiledModule, sb *Sandbox) *linesInstance {
	ctx, cancel := context.WithCancel(context.Background())
	in, out := io.Pipe()
	l := &linesInstance{cancel: cancel, stdin: out, exited: make(chan struct{})}
	l.stdout = &lineWriter{max: MaxLine, onLine: func(line []byte, tooLong bool) {
		if c := l.cur.Load(); c != nil {
			c.protocolLine(line, tooLong)
		}
	}}
	l.stderr = &lineWriter{max: task.LogLineMax, onLine: func(line []byte, tooLong bool) {
		if c := l.cur.Load(); c != nil {
			c.outputLine(line, tooLong)
		}
	}}
	mc := sb.moduleConfig().WithStdin(in).WithStdout(l.stdout).WithStderr(l.stderr).WithStartFunctions("_start")
	go func() {
		defer close(l.exited)
		mod, err := rt.InstantiateModule(ctx, cm, mc)
		if mod != nil {
			_ = mod.Close(ctx)
		}
		_ = in.CloseWithError(io.ErrClosedPipe)
		if err == nil {
			err = errors.New("its main returned")
		}
		l.err = err
	}()
	return l
}

// run sends c to the instance and waits for its answer; ok says whether
// the instance can run another task.
func (l *linesInstance) run(ctx context.Context, c *call) (ok bool) {
	line, err := requestLine(c)
	if err != nil {
		c.answer(nil, err)
		return true
	}
	l.cur.Store(c)
	defer l.cur.Store(nil)
	go func() {
		// A module that does not read its stdin blocks this write; it
		// ends when the instance is closed.
		_, _ = l.stdin.Write(line)
	}()
	select {
	case <-c.done:
		return c.err == nil || !errors.Is(c.err, ErrLineTooLong)
	case <-l.exited:
		l.stderr.end()
		c.answer(nil, c.failure(ctx, "before answering", l.err))
		return false
	case <-ctx.Done():
		l.close(context.Background())
		c.answer(nil, context.Cause(ctx))
		return false
	}
}

func (l *linesInstance) alive() bool {
	select {
	case <-l.exited:
		return false
	default:
		return true
	}
}

// close stops the instance and waits for its end.
func (l *linesInstance) close(context.Context) {
	l.cancel()
	_ = l.stdin.CloseWithError(io.ErrClosedPipe)
	<-l.exited
}
