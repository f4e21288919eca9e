package stream

import (
	"errors"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/core"
)

type profile struct {
	ID   string `msgpack:"id"`
	Name string `msgpack:"name"`
}

type numbered struct {
	ID   int64  `msgpack:"id"`
	Name string `msgpack:"name"`
}

// Join refuses a stream and a table whose keys are not routed alike, and
// says why: the partition counts differ, or the keys are of other kinds.
func TestJoinRefusesNotCoPartitioned(t *testing.T) {
	t.Parallel()
	cat, _ := newCatalog(t, core.Defaults{})
	orders, err := Declare[order](cat, "orders", KeyField("customer"), Partitions(16))
	if err != nil {
		t.Fatal(err)
	}
	declareTable := func(name string, partitions int, opt Option) *Table[profile] {
		t.Helper()
		s, err := Declare[profile](cat, name, opt, Partitions(partitions))
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := DeclareTable[profile](s, "keep", "profiles")
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}

	_, err = Join(orders, declareTable("customers", 8, KeyField("id")))
	if !errors.Is(err, ErrNotCoPartitioned) {
		t.Fatalf("8 against 16 partitions: %v, want ErrNotCoPartitioned", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "orders has 16 partitions, customers 8") ||
		!strings.Contains(msg, "different partitions") {
		t.Errorf("the error does not say why: %s", msg)
	}

	numbers, err := Declare[numbered](cat, "numbers", KeyField("id"), Partitions(16))
	if err != nil {
		t.Fatal(err)
	}
	numberTable, err := DeclareTable[profile](numbers, "keep", "profiles")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Join(orders, numberTable)
	if !errors.Is(err, ErrNotCoPartitioned) || !strings.Contains(err.Error(), "orders is keyed by text values, numbers by integer values") {
		t.Errorf("text keys against integer keys: %v", err)
	}
	byFunc := declareTable("byfunc", 16, KeyFunc(func(p profile) int { return len(p.ID) }))
	if _, err := Join(orders, byFunc); !errors.Is(err, ErrNotCoPartitioned) {
		t.Errorf("text keys against a KeyFunc's integers: %v, want ErrNotCoPartitioned", err)
	}

	same := declareTable("people", 16, KeyFunc(func(p profile) string { return p.ID }))
	j, err := Join(orders, same)
	if err != nil {
		t.Fatalf("co-partitioned: %v", err)
	}
	if j.Table() != same {
		t.Error("the join's table is not the one joined")
	}
	maps, err := Declare[map[string]any](cat, "maps", KeyField("id"), Partitions(16))
	if err != nil {
		t.Fatal(err)
	}
	mapTable, err := DeclareTable[profile](maps, "keep", "profiles")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Join(orders, mapTable); err != nil {
		t.Errorf("keys of a kind known only per record: %v", err)
	}
}

// A global table needs a table with a change log, of its own app; the log's
// length is checked and must agree between declarations.
func TestGlobalTableRefusesWithoutChangeLog(t *testing.T) {
	t.Parallel()
	cat, _ := newCatalog(t, core.Defaults{})
	s, err := Declare[profile](cat, "customers", KeyField("id"), Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := DeclareTable[profile](s, "keep", "plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GlobalTable(cat, plain); !errors.Is(err, ErrNoChangeLog) || !strings.Contains(err.Error(), "KeepChanges") {
		t.Errorf("a table without a change log: %v, want ErrNoChangeLog naming KeepChanges", err)
	}
	if _, err := DeclareTable[profile](s, "keep", "bad", KeepChanges(-1)); err == nil {
		t.Error("a negative change log length was accepted")
	}
	logged, err := DeclareTable[profile](s, "keep", "logged", KeepChanges(100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DeclareTable[profile](s, "keep", "logged", KeepChanges(50)); !errors.Is(err, ErrConflict) {
		t.Errorf("declared again with another log length: %v, want ErrConflict", err)
	}
	other, _ := newCatalog(t, core.Defaults{})
	if _, err := GlobalTable(other, logged); err == nil {
		t.Error("a table of another app was accepted")
	}
	if _, err := GlobalTable(cat, logged, GlobalMaxKeys(0)); err == nil {
		t.Error("a bound of 0 keys was accepted")
	}
	g, err := GlobalTable(cat, logged)
	if err != nil {
		t.Fatal(err)
	}
	if g.Name() != "global.customers.keep.logged" {
		t.Errorf("name %q", g.Name())
	}
}
