package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

const goredis = "github.com/redis/go-redis/v9"

// taskRedisAllowed are the go-redis identifiers package task may name: the
// clients and connections it passes through to internal/rdb, the
// values rdb returns, and redis.Nil.
var taskRedisAllowed = map[string]bool{
	"UniversalClient": true, "Client": true, "Conn": true, "PubSub": true, "XStream": true, "Nil": true,
}

// taskPassThrough are the go-redis methods package task may call: the
// channel of the subscription rdb.Subscribe returns, and the taking and
// closing of a connection of its own (its commands, subscribing included,
// go through rdb).
var taskPassThrough = map[string]bool{"Channel": true, "Close": true, "Conn": true}

// taskNotRedis are values of package task whose methods share a name with
// a go-redis command and take a context too (the enqueue rounds' Do), by
// the last name of the receiver's expression.
var taskNotRedis = map[string]bool{"joined": true}

// Package task runs no Redis command itself: every command, pipeline and
// script is a function of internal/rdb, and task passes its clients
// through. A call in task's non-test files whose method is one of a
// go-redis client's, pipeline's or script's, and not a name task declares
// itself, that passes a context first (as every go-redis command does),
// fails, as does any go-redis identifier but a few types and Nil.
func TestTaskRunsNoRedisCommand(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("../../task/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	own := map[string]bool{} // names task declares: its functions, methods, fields
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				own[n.Name.Name] = true
			case *ast.Field:
				for _, name := range n.Names {
					own[name.Name] = true
				}
			}
			return true
		})
	}
	if len(files) == 0 {
		t.Fatal("no files of package task")
	}
	commands := map[string]bool{}
	for _, v := range []any{(*redis.UniversalClient)(nil), (*redis.Pipeliner)(nil), (*redis.Scripter)(nil)} {
		typ := reflect.TypeOf(v).Elem()
		for i := range typ.NumMethod() {
			commands[typ.Method(i).Name] = true
		}
	}
	script := reflect.TypeOf(&redis.Script{})
	for i := range script.NumMethod() {
		commands[script.Method(i).Name] = true
	}
	var bad []string
	for _, f := range files {
		pkgs := map[string]bool{} // the names of the packages f imports
		redisName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if path == goredis {
				name = "redis"
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			pkgs[name] = true
			if path == goredis {
				redisName = name
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && redisName != "" && id.Name == redisName && !taskRedisAllowed[n.Sel.Name] {
					bad = append(bad, fset.Position(n.Pos()).String()+": redis."+n.Sel.Name)
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && pkgs[id.Name] {
					return true // a package's function
				}
				name := sel.Sel.Name
				if commands[name] && !own[name] && !taskPassThrough[name] && !taskNotRedis[lastName(sel.X)] &&
					len(n.Args) > 0 && isContext(n.Args[0]) {
					bad = append(bad, fset.Position(n.Pos()).String()+": ."+name+"(...)")
				}
			}
			return true
		})
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("package task runs Redis itself (move it into internal/rdb): %s", b)
	}
}

// lastName returns the last name of x: "b" of a.b, a.b(), a.b[i]; "" when
// it has none.
func lastName(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.CallExpr:
		return lastName(x.Fun)
	case *ast.IndexExpr:
		return lastName(x.X)
	case *ast.ParenExpr:
		return lastName(x.X)
	}
	return ""
}

// isContext reports whether x reads as a context: a name with ctx in it,
// or a call of package context.
func isContext(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return strings.Contains(strings.ToLower(x.Name), "ctx")
	case *ast.CallExpr:
		sel, ok := x.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == "context"
	}
	return false
}
