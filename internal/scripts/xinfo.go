package scripts

import "fmt"

// GroupInfo is what XINFO GROUPS says about one consumer group, read from
// the raw reply: go-redis reads an unknown entries-read counter (nil) as 0.
type GroupInfo struct {
	Name            string
	LastDeliveredID string
	EntriesRead     int64
	EntriesReadOK   bool // false when Redis does not know the counter (or is older than 7)
}

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

// ParseGroups parses a raw XINFO GROUPS reply (see GroupFields).
func ParseGroups(v any) ([]GroupInfo, error) {
	groups, err := GroupFields(v)
	if err != nil {
		return nil, err
	}
	out := make([]GroupInfo, 0, len(groups))
	for _, fields := range groups {
		var info GroupInfo
		info.Name, _ = fields["name"].(string)
		info.LastDeliveredID, _ = fields["last-delivered-id"].(string)
		info.EntriesRead, info.EntriesReadOK = fields["entries-read"].(int64)
		out = append(out, info)
	}
	return out, nil
}
