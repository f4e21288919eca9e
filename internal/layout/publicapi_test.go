package layout

import (
	"encoding/json"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The API of a public package names only types a user can name: no
// exported function, method, field, variable or interface method of a
// package outside internal/ takes, returns or holds a type defined in an
// internal package (a caller outside the module could not build the
// argument, and go doc would show a type it does not document). Aliases of
// internal types are refused by TestNoAliasesOfInternalTypes; this test
// reads the compiled API of every public package of the library module.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Export,Name", "./...")
	cmd.Dir = "../.."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct{ ImportPath, Export, Name string }
	exports := map[string]string{}
	var public []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		if strings.HasPrefix(p.ImportPath, module+"/") && !isInternal(name) && p.Name != "main" {
			public = append(public, p.ImportPath)
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	if len(public) == 0 {
		t.Fatal("no public package found")
	}
	var bad []string
	for _, path := range public {
		p, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, name := range p.Scope().Names() {
			obj := p.Scope().Lookup(name)
			if !obj.Exported() {
				continue
			}
			where := strings.TrimPrefix(path, module+"/") + "." + name
			if tn, ok := obj.(*types.TypeName); ok {
				if tn.IsAlias() {
					continue // TestNoAliasesOfInternalTypes
				}
				bad = append(bad, internalIn(where, tn.Type().Underlying(), map[types.Type]bool{})...)
				if n, ok := tn.Type().(*types.Named); ok {
					for m := range n.Methods() {
						if m.Exported() {
							bad = append(bad, internalIn(where+"."+m.Name(), m.Type(), map[types.Type]bool{})...)
						}
					}
				}
				continue
			}
			bad = append(bad, internalIn(where, obj.Type(), map[types.Type]bool{})...)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// internalIn returns where t (the type of the API element at where) names a
// type of an internal package through what a user sees: parameters and
// results, exported fields, interface methods, element types. Unexported
// fields are not part of the API.
func internalIn(where string, t types.Type, seen map[types.Type]bool) []string {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && isInternal(strings.TrimPrefix(p.Path(), module+"/")) && strings.HasPrefix(p.Path(), module) {
			return []string{where + " names " + p.Path() + "." + t.Obj().Name()}
		}
		var bad []string
		if args := t.TypeArgs(); args != nil {
			for a := range args.Types() {
				bad = append(bad, internalIn(where, a, seen)...)
			}
		}
		return bad
	case *types.Alias:
		return internalIn(where, types.Unalias(t), seen)
	case *types.Pointer:
		return internalIn(where, t.Elem(), seen)
	case *types.Slice:
		return internalIn(where, t.Elem(), seen)
	case *types.Array:
		return internalIn(where, t.Elem(), seen)
	case *types.Map:
		return append(internalIn(where, t.Key(), seen), internalIn(where, t.Elem(), seen)...)
	case *types.Chan:
		return internalIn(where, t.Elem(), seen)
	case *types.Signature:
		var bad []string
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tup.Variables() {
				bad = append(bad, internalIn(where, v.Type(), seen)...)
			}
		}
		return bad
	case *types.Struct:
		var bad []string
		for f := range t.Fields() {
			if f.Exported() {
				bad = append(bad, internalIn(where+"."+f.Name(), f.Type(), seen)...)
			}
		}
		return bad
	case *types.Interface:
		var bad []string
		for m := range t.Methods() {
			if m.Exported() {
				bad = append(bad, internalIn(where+"."+m.Name(), m.Type(), seen)...)
			}
		}
		return bad
	}
	return nil
}
