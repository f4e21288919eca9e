package wasm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// A Contract is how a module and the worker talk.
type Contract string

// The contracts.
const (
	// Reactor modules export alloc(size u32) u32 and execute(ptr u32, len
	// u32) u64, and are initialised by _initialize when they export it:
	// the worker copies the payload into memory that alloc returned,
	// calls execute, and reads the answer envelope at the pointer and
	// length packed in its result (pointer in the high 32 bits).
	Reactor Contract = "reactor"
	// Lines modules are WASI commands (they export _start) that speak the
	// JSON-lines protocol of subprocess handlers over stdin and stdout.
	Lines Contract = "lines"
)

// ErrContract is matched by the error of a module that does not export
// what its contract needs.
var ErrContract = errors.New("wasm: module does not follow its contract")

// ParseContract parses a contract's name: "reactor" or "lines".
func ParseContract(s string) (Contract, error) {
	switch c := Contract(s); c {
	case Reactor, Lines:
		return c, nil
	}
	return "", fmt.Errorf("unknown contract %q: want reactor or lines", s)
}

type export struct {
	name            string
	params, results []api.ValueType
}

var i32, i64 = api.ValueTypeI32, api.ValueTypeI64

var needs = map[Contract][]export{
	Reactor: {
		{"alloc", []api.ValueType{i32}, []api.ValueType{i32}},
		{"execute", []api.ValueType{i32, i32}, []api.ValueType{i64}},
	},
	Lines: {{"_start", nil, nil}},
}

// Detect returns the contract a compiled module's exports say it follows:
// Reactor when it exports execute, Lines when it exports _start.
func Detect(m wazero.CompiledModule) (Contract, error) {
	fns := m.ExportedFunctions()
	if _, ok := fns["execute"]; ok {
		return Reactor, nil
	}
	if _, ok := fns["_start"]; ok {
		return Lines, nil
	}
	return "", fmt.Errorf("%w: it exports neither execute (reactor) nor _start (lines); its functions: %s", ErrContract, exportNames(m))
}

// Check returns an error matching ErrContract, naming what is missing,
// when the compiled module m does not export what contract c needs.
func Check(m wazero.CompiledModule, c Contract) error {
	want, ok := needs[c]
	if !ok {
		return fmt.Errorf("unknown contract %q: want reactor or lines", c)
	}
	fns := m.ExportedFunctions()
	var problems []string
	for _, w := range want {
		f, ok := fns[w.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("no function %s exported", w.name))
		case !slices.Equal(f.ParamTypes(), w.params) || !slices.Equal(f.ResultTypes(), w.results):
			problems = append(problems, fmt.Sprintf("%s has the signature %s, want %s", w.name, signature(f.ParamTypes(), f.ResultTypes()), signature(w.params, w.results)))
		}
	}
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch {
		case mod == "wasi_snapshot_preview1":
		case mod == hostModule && (name == "progress" || name == "partial"):
			if !slices.Equal(f.ParamTypes(), []api.ValueType{i32, i32}) || len(f.ResultTypes()) > 0 {
				problems = append(problems, fmt.Sprintf("it imports %s.%s as %s, want (i32, i32) -> ()", mod, name, signature(f.ParamTypes(), f.ResultTypes())))
			}
		default:
			problems = append(problems, fmt.Sprintf("it imports %s.%s, and only wasi_snapshot_preview1 and leat.progress and leat.partial are offered", mod, name))
		}
	}
	for _, mem := range m.ImportedMemories() {
		mod, name, _ := mem.Import()
		problems = append(problems, fmt.Sprintf("it imports memory %s.%s: a module must define its own", mod, name))
	}
	if c == Reactor {
		if _, ok := m.ExportedMemories()["memory"]; !ok {
			problems = append(problems, "no memory exported as \"memory\"")
		}
		if f, ok := fns["_initialize"]; ok && (len(f.ParamTypes()) > 0 || len(f.ResultTypes()) > 0) {
			problems = append(problems, "_initialize takes or returns values")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w %s: %s (its functions: %s)", ErrContract, c, strings.Join(problems, "; "), exportNames(m))
	}
	return nil
}

func exportNames(m wazero.CompiledModule) string {
	var names []string
	for n := range m.ExportedFunctions() {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func signature(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return name(params) + " -> " + name(results)
}
