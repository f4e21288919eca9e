package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildOptions are the options of Build.
type BuildOptions struct {
	// Contract is the module's ("": Reactor when a Go file of the package
	// has a //go:wasmexport execute directive, else Lines).
	Contract Contract
	// Flags are more flags for go build (-ldflags=..., -trimpath).
	Flags []string
}

// Build compiles the Go main package in dir to a WebAssembly module at out
// with the standard Go toolchain (no TinyGo):
//
//	GOOS=wasip1 GOARCH=wasm go build -o out .                      # lines
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o out .  # reactor
//
// It returns the contract it built for; the error holds go build's output.
func Build(ctx context.Context, dir, out string, o BuildOptions) (Contract, error) {
	c := o.Contract
	if c == "" {
		var err error
		if c, err = detectSource(dir); err != nil {
			return "", err
		}
	}
	if _, err := ParseContract(string(c)); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", abs}
	if c == Reactor {
		args = append(args, "-buildmode=c-shared")
	}
	args = append(append(args, o.Flags...), ".")
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("GOOS=wasip1 GOARCH=wasm go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, strings.TrimSpace(output.String()))
	}
	return c, nil
}

// detectSource returns the contract of the Go package in dir.
func detectSource(dir string) (Contract, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no Go files in %s", dir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//go:wasmexport execute") {
				return Reactor, nil
			}
		}
	}
	return Lines, nil
}

// goTool returns the go command: the one on PATH, else this program's
// toolchain's.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil || !errors.Is(err, exec.ErrNotFound) && p != "" {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
