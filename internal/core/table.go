package core

import (
	"fmt"
	"slices"
	"strings"
)

// TableDef is what the processor registry records of a table a processor
// keeps on a stream, for tools without the app's code.
type TableDef struct {
	Name  string `json:"name"`
	Codec string `json:"codec"`
	// Changes is the length of the table's change log per partition
	// (stream.KeepChanges); 0 when it keeps none.
	Changes int64 `json:"changes,omitempty"`
}

// tables are the tables declared on a stream, by processor; guarded by
// Core.tablesMu.
type tables map[string][]TableDef

// DeclareTable records that processor keeps table name, encoded with codec,
// on the stream, with a change log of changes entries per partition (0:
// none). Declaring it again with the same codec and change log is fine;
// with others it fails with ErrConflict.
func (c *Core) DeclareTable(processor, name, codec string, changes int64) error {
	c.tablesMu.Lock()
	defer c.tablesMu.Unlock()
	if c.tables == nil {
		c.tables = tables{}
	}
	list := c.tables[processor]
	i := slices.IndexFunc(list, func(d TableDef) bool { return d.Name == name })
	if i >= 0 {
		if list[i].Codec != codec {
			return fmt.Errorf("%w: table %q of processor %q on stream %q is declared with codec %s, not %s",
				ErrConflict, name, processor, c.def.Name, list[i].Codec, codec)
		}
		if list[i].Changes != changes {
			return fmt.Errorf("%w: table %q of processor %q on stream %q is declared with a change log of %d entries, not %d",
				ErrConflict, name, processor, c.def.Name, list[i].Changes, changes)
		}
		return nil
	}
	list = append(list, TableDef{Name: name, Codec: codec, Changes: changes})
	slices.SortFunc(list, func(a, b TableDef) int { return strings.Compare(a.Name, b.Name) })
	c.tables[processor] = list
	return nil
}

// Tables returns the tables processor keeps on the stream, by name.
func (c *Core) Tables(processor string) []TableDef {
	c.tablesMu.Lock()
	defer c.tablesMu.Unlock()
	return slices.Clone(c.tables[processor])
}
