package runner

import (
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// changeLogs returns, for each table of writes declared with a change log
// (stream.KeepChanges), the entry of its change log that describes them,
// appended by the commit that applies them (table_commit.lua), so that a
// global table following the log sees exactly the committed writes.
func (p *partition) changeLogs(writes []core.TableWrite) []rdb.TableWrite {
	var out []rdb.TableWrite
	for _, d := range p.e.stream.Tables(p.e.processor) {
		if d.Changes <= 0 {
			continue
		}
		var changes []rdb.Change
		for _, w := range writes {
			if w.Table == d.Name {
				changes = append(changes, rdb.Change{Key: w.Key, Value: w.Value, Delete: w.Delete})
			}
		}
		if len(changes) == 0 {
			continue
		}
		out = append(out, rdb.TableWrite{
			Table: p.e.keys.TableChanges(p.e.stream.Name(), p.e.processor, d.Name, p.n),
			Value: rdb.EncodeChanges(changes),
			Log:   d.Changes,
		})
	}
	return out
}
