package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The public packages define the types their users use: an exported type
// alias of a type of an internal package (type Codec = core.Codec) shows in
// go doc as that line, without the type's methods, fields or docs. A public
// package defines its own type instead (an interface with the same
// methods, or a type converted where it meets the internal one).
func TestNoAliasesOfInternalTypes(t *testing.T) {
	for _, l := range layers {
		if l.kind == top || isInternal(l.pkg) {
			continue
		}
		for _, bad := range internalAliases(t, filepath.Join("../..", l.pkg)) {
			t.Errorf("%s: %s", l.pkg, bad)
		}
	}
}

func isInternal(path string) bool {
	return path == "internal" || strings.HasPrefix(path, "internal/") ||
		strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}

// internalAliases returns the exported type aliases of the package in dir
// (its non-test files) whose target names a type of an internal package.
func internalAliases(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	fset := token.NewFileSet()
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]string{} // import name -> path, for internal packages
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !isInternal(path) {
				continue
			}
			local := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			internal[local] = path
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if !ts.Assign.IsValid() || !ts.Name.IsExported() {
					continue
				}
				ast.Inspect(ts.Type, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] != "" {
						bad = append(bad, fset.Position(ts.Pos()).String()+": type "+ts.Name.Name+
							" is an alias of "+internal[x.Name]+"."+sel.Sel.Name+": define it in the package")
					}
					return false
				})
			}
		}
	}
	return bad
}
