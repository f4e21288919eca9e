package scripts

import "fmt"

// GroupFields parses a raw XINFO GROUPS reply, RESP2 (arrays of field,
// value pairs) or RESP3 (maps), into one field map per group; nil gives
// none.
func GroupFields(v any) ([]map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("malformed XINFO GROUPS reply %T", v)
	}
	out := make([]map[string]any, 0, len(list))
	for _, g := range list {
		fields := map[string]any{}
		switch g := g.(type) {
		case map[any]any:
			for k, v := range g {
				if k, ok := k.(string); ok {
					fields[k] = v
				}
			}
		case map[string]any:
			fields = g
		case []any:
			for i := 0; i+1 < len(g); i += 2 {
				if k, ok := g[i].(string); ok {
					fields[k] = g[i+1]
				}
			}
		default:
			return nil, fmt.Errorf("malformed XINFO GROUPS entry %T", g)
		}
		out = append(out, fields)
	}
	return out, nil
}
