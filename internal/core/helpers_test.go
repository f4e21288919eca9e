package core_test

import (
	"testing"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

type order struct {
	ID       int64   `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
	Note     string  `msgpack:"note,omitempty"`
}

// newCatalog returns a catalog without a connection: enough to declare
// streams and encode records.
func newCatalog(t testing.TB) *core.Catalog {
	t.Helper()
	return core.NewCatalog(nil, rdb.NewKeySpace("", "shop"), core.Defaults{}, nil)
}
