package api

import (
	"os"
	"strings"
	"testing"
)

// openapi.yaml documents every endpoint with its method, but the
// dashboard's files, and no endpoint the handler does not serve.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	b, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{} // "METHOD PATH"
	inPaths, path := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && line != "" && !strings.HasPrefix(line, " "):
			inPaths = false
		case inPaths && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case inPaths && path != "" && len(line) > 4 && line[:4] == "    " && line[4] != ' ':
			method := strings.TrimSuffix(strings.TrimSpace(line), ":")
			switch method {
			case "get", "post", "put", "patch", "delete":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	for _, rt := range (&handler{}).routes() {
		method, p, _ := strings.Cut(rt.pattern, " ")
		if p == "/{$}" || strings.HasPrefix(p, "/dashboard/") {
			continue
		}
		served[method+" "+p] = true
		if !documented[method+" "+p] {
			t.Errorf("%s is served but not in openapi.yaml", rt.pattern)
		}
	}
	for d := range documented {
		if !served[d] {
			t.Errorf("openapi.yaml documents %s, which is not served", d)
		}
	}
	if len(served) < 20 {
		t.Fatalf("%d routes served: the route table was not read", len(served))
	}
}
