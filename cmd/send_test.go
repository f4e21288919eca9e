package cmd

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/stream"
)

var entryID = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

func TestSend(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, "", s.args("send", "--key", "customer", "--header", "trace=a=b,c",
		"orders", `{"customer":"c42","amount":12.5,"items":3}`)...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("status %d, stderr %q", r.status, r.stderr)
	}
	id := strings.TrimSuffix(r.stdout, "\n")
	if !entryID.MatchString(id) || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout %q, want one entry ID", r.stdout)
	}

	p := stream.PartitionOf([]byte("c42"), stream.DefaultPartitions)
	if n := s.total(t, "orders", stream.DefaultPartitions); n != 1 {
		t.Fatalf("%d entries in all partitions, want 1", n)
	}
	es := s.entries(t, "orders", p)
	if len(es) != 1 {
		t.Fatalf("partition %d holds %d entries, want 1", p, len(es))
	}
	e := es[0]
	if e.ID != id || string(e.Key) != "c42" || e.Headers["trace"] != "a=b,c" || len(e.Headers) != 1 {
		t.Errorf("entry %+v, want ID %s, key c42 and header trace=a=b,c", e, id)
	}
	codec, err := core.LookupCodec(e.Codec)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := codec.Unmarshal(e.Data, &got); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	if want := `{"amount":12.5,"customer":"c42","items":3}`; string(gotJSON) != want {
		t.Errorf("decoded record %s, want %s", gotJSON, want)
	}
}

// order is the record type of the app declared by declareOrders.
type order struct {
	ID       int64  `json:"id"`
	Customer string `json:"customer"`
}

// declareOrders is the Setup of an app that declares stream "orders" keyed by
// a Go function.
func declareOrders(cfg app.Config) (*app.App, error) {
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := stream.Declare[order](a, "orders", stream.KeyFunc(func(o order) string { return o.Customer })); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func TestSendEmbedded(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, declareOrders, "", s.args("send", "orders", `{"id":7,"customer":"c9"}`)...)
	if r.status != 0 || !entryID.MatchString(strings.TrimSpace(r.stdout)) {
		t.Fatalf("status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	p := stream.PartitionOf([]byte("c9"), stream.DefaultPartitions)
	es := s.entries(t, "orders", p)
	if len(es) != 1 {
		t.Fatalf("partition %d holds %d entries, want 1", p, len(es))
	}
	var got order
	if err := stream.MsgPack.Unmarshal(es[0].Data, &got); err != nil {
		t.Fatal(err)
	}
	if got != (order{ID: 7, Customer: "c9"}) {
		t.Errorf("decoded %+v", got)
	}

	// The declaration routes: flags may only repeat it.
	r = run(t, declareOrders, "", s.args("send", "--partitions", "16", "orders", `{"id":8,"customer":"c9"}`)...)
	if r.status != 0 {
		t.Errorf("--partitions repeating the declaration: status %d, stderr %q", r.status, r.stderr)
	}
	r = run(t, declareOrders, "", s.args("send", "--partitions", "4", "orders", `{"id":9,"customer":"c9"}`)...)
	wantFailure(t, r, exitUsage, `stream "orders" is declared by app "shop" with 16 partitions, not 4`)
	r = run(t, declareOrders, "", s.args("send", "--key", "customer", "orders", `{"id":9,"customer":"c9"}`)...)
	wantFailure(t, r, exitUsage, "Go key function", "drop --key")
	if n := s.total(t, "orders", stream.DefaultPartitions); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
}
