package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// The API's description is a valid OpenAPI 3.1 document: it passes the
// OpenAPI Initiative's JSON schema for 3.1 documents
// (testdata/oas31-schema.json, the 2022-10-07 release, Apache-2.0), uses
// no 3.0-only keyword, and every operation has a unique operationId, so
// client generators can name them. api's routes test checks that every
// served route is described and every described route served.
func TestOpenAPIDocumentValid(t *testing.T) {
	b, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("openapi.yaml is not YAML: %v", err)
	}
	doc, err = jsonValue(doc)
	if err != nil {
		t.Fatal(err)
	}

	c := jsonschema.NewCompiler()
	f, err := os.Open("testdata/oas31-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("oas31.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("oas31.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("openapi.yaml is not a valid OpenAPI 3.1 document:\n%v", err)
	}

	// OpenAPI 3.1 schemas are JSON Schema: a null is a type
	// ([string, "null"]); 3.0's nullable is ignored by 3.1 tools.
	if bytes.Contains(b, []byte("nullable:")) {
		t.Error(`openapi.yaml uses "nullable", which OpenAPI 3.1 does not have: use type: [T, "null"]`)
	}

	seen := map[string]string{}
	valid := regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)
	paths, _ := doc.(map[string]any)["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		item, _ := paths[path].(map[string]any)
		for _, method := range []string{"get", "put", "post", "delete", "patch", "head", "options"} {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			where := method + " " + path
			id, _ := op["operationId"].(string)
			switch {
			case id == "":
				t.Errorf("%s has no operationId", where)
			case !valid.MatchString(id):
				t.Errorf("%s: operationId %q is not lowerCamelCase", where, id)
			case seen[id] != "":
				t.Errorf("%s and %s share operationId %q", seen[id], where, id)
			default:
				seen[id] = where
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no operations found")
	}
}

// jsonValue converts what YAML decoded into the values JSON decodes to
// (string keys, float64 numbers), as the schema validator expects.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case int:
		return json.Number(fmt.Sprint(v)), nil
	case float64:
		return json.Number(fmt.Sprint(v)), nil
	case string, bool, nil:
		return v, nil
	}
	return nil, fmt.Errorf("openapi.yaml holds a %T, which JSON cannot", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
