package executor

import (
	"fmt"
	"testing"

	"github.com/leatdev/leat/internal/core"
)

// Staged writes: the last write of a key wins and is what Staged returns;
// Discard drops them all. The cache of applied values stays within its
// bound (here the stream has 1 partition: tableCacheTotal values).
func TestTableStagingAndCacheBound(t *testing.T) {
	p := testPartition(t, 0)
	p.Stage(core.TableWrite{Table: "t", Key: "a", Value: []byte("1")})
	p.Stage(core.TableWrite{Table: "t", Key: "b", Value: []byte("2")})
	p.Stage(core.TableWrite{Table: "t", Key: "a", Delete: true})
	p.Stage(core.TableWrite{Table: "u", Key: "a", Value: []byte("3")})
	if len(p.staged) != 3 {
		t.Fatalf("%d writes staged, want 3 (one per table and key)", len(p.staged))
	}
	if w, ok := p.Staged("t", "a"); !ok || !w.Delete {
		t.Fatalf("Staged(t, a) = %+v, %v; want the delete", w, ok)
	}
	if w, ok := p.Staged("u", "a"); !ok || string(w.Value) != "3" {
		t.Fatalf("Staged(u, a) = %+v, %v", w, ok)
	}
	p.Discard()
	if _, ok := p.Staged("t", "b"); ok || len(p.staged) != 0 {
		t.Fatal("writes left after Discard")
	}
	for i := range tableCacheTotal + 10 {
		p.cacheTable("t", fmt.Sprint(i), tableValue{ok: true})
		if len(p.tableCache) > tableCacheTotal {
			t.Fatalf("cache holds %d values, bound %d", len(p.tableCache), tableCacheTotal)
		}
	}
}
