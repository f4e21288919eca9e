package layout

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// redisHome is the one package that runs Redis commands.
const redisHome = "internal/rdb"

// redisTools are the packages that may run Redis commands besides
// internal/rdb: tools, not the runtime (the test harness, the benchmarks,
// whose raw go-redis baseline is their point, and fault injection).
var redisTools = []string{"internal/tools/redistest", "internal/tools/bench", "internal/tools/chaos"}

// redisPassThrough are the go-redis methods that send no command of the
// application: closing, taking a connection from a pool, hooks and
// options, a subscription's channel, a cluster client's routing (its slot
// map: the node of a key, a reload, which internal/topology asks for after
// a failover), and the reading of replies (the *Cmd types, Cmder).
var redisPassThrough = map[string]bool{
	"Close": true, "Conn": true, "AddHook": true, "Options": true, "PoolStats": true, "Channel": true,
	"ChannelSize": true, "String": true, "Error": true, "RedisError": true, "MasterForKey": true,
	"ReloadState": true,
}

// redisFuncs are the go-redis functions that run nothing themselves but
// make a script; every other function (client constructors, URL parsing,
// error predicates) is pass-through.
var redisFuncs = map[string]bool{"NewScript": true}

// Only internal/rdb runs Redis commands: no non-test file of another
// package of the library (outside the tools) calls a method of a go-redis
// client, connection, pipeline, subscription or script, or makes a script.
// It type-checks every package of the library module and leattest against
// the compiled export data of its imports (go list -export), so a command
// is found whatever the value's name or the interface it goes through.
func TestRedisInOnePlace(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,GoFiles,Imports,Export", "./...", "./leattest/...")
	cmd.Dir = "../.."
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type pkg struct {
		ImportPath string
		Dir        string
		GoFiles    []string
		Export     string
	}
	exports := map[string]string{}
	var ours []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, module+"/") || p.ImportPath == module {
			ours = append(ours, p)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	checked := 0
	var bad []string
	for _, p := range ours {
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		if name == redisHome || redisTool(name) || len(p.GoFiles) == 0 {
			continue
		}
		var files []*ast.File
		for _, f := range p.GoFiles {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, af)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp.(types.ImporterFrom)}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", name, err)
		}
		checked++
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				what := redisCommand(info, sel)
				if what == "" {
					return true
				}
				bad = append(bad, fset.Position(call.Pos()).String()+": "+what)
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("no package importing go-redis was checked")
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("a Redis command outside internal/rdb (make it a function of internal/rdb): %s", b)
	}
}

// redisCommand returns what the call of sel runs on Redis ("Type.Method",
// or "redis.NewScript"), "" when it runs nothing.
func redisCommand(info *types.Info, sel *ast.SelectorExpr) string {
	if s, ok := info.Selections[sel]; ok {
		if s.Kind() != types.MethodVal || !isGoRedis(s.Obj().Pkg()) {
			return ""
		}
		name := s.Obj().Name()
		if pass, listed := redisPassThrough[name]; listed && pass {
			return ""
		}
		// The type that declares the method (an embedded one's, not the
		// embedder's): a reply type's reading runs nothing.
		recv := types.Unalias(s.Obj().Type().(*types.Signature).Recv().Type())
		if p, ok := recv.(*types.Pointer); ok {
			recv = p.Elem()
		}
		recvName := "?"
		if n, ok := types.Unalias(recv).(*types.Named); ok {
			recvName = n.Obj().Name()
			if strings.HasSuffix(recvName, "Cmd") || recvName == "Cmder" {
				return "" // reading a reply
			}
		}
		return recvName + "." + name
	}
	if obj, ok := info.Uses[sel.Sel].(*types.Func); ok && isGoRedis(obj.Pkg()) && redisFuncs[obj.Name()] {
		return "redis." + obj.Name()
	}
	return ""
}

// isGoRedis reports whether p is go-redis or one of its packages.
func isGoRedis(p *types.Package) bool {
	return p != nil && (p.Path() == goredis || strings.HasPrefix(p.Path(), goredis+"/"))
}

func redisTool(name string) bool {
	for _, t := range redisTools {
		if name == t || strings.HasPrefix(name, t+"/") {
			return true
		}
	}
	return false
}
