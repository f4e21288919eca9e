package cmd

import (
	"context"
	"testing"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/stream"
)

func TestSendUsesRegistry(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, "", s.args("send", "--partitions", "8", "--key", "customer", "payments", `{"customer":"c1"}`)...)
	if r.status != 0 {
		t.Fatalf("first send: status %d, stderr %q", r.status, r.stderr)
	}
	// A new run knows the stream only from the registry.
	r = run(t, nil, "", s.args("send", "payments", `{"customer":"c2"}`)...)
	if r.status != 0 {
		t.Fatalf("send without flags: status %d, stderr %q", r.status, r.stderr)
	}
	for _, key := range []string{"c1", "c2"} {
		p := stream.PartitionOf([]byte(key), 8)
		found := false
		for _, e := range s.entries(t, "payments", p) {
			found = found || string(e.Key) == key
		}
		if !found {
			t.Errorf("key %s is not on partition %d of 8", key, p)
		}
	}
	if n := s.total(t, "payments", 16); n != 2 {
		t.Errorf("%d entries over 16 partition keys, want 2", n)
	}

	r = run(t, nil, "", s.args("send", "--partitions", "4", "payments", `{"customer":"c3"}`)...)
	wantFailure(t, r, exitUsage, `stream "payments" is registered in app "shop" with 8 partitions, not 4`, "order")
	r = run(t, nil, "", s.args("send", "--key", "id", "payments", `{"customer":"c3","id":1}`)...)
	wantFailure(t, r, exitUsage, `key field "customer", not "id"`)
	if n := s.total(t, "payments", 16); n != 2 {
		t.Errorf("%d entries after the refused sends, want 2", n)
	}
}

func TestSendUnknownStream(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, "", s.args("send", "nope", `{"customer":"c1"}`)...)
	wantFailure(t, r, exitUsage, `unknown stream "nope"`, `registry of app "shop"`, "--key FIELD")
}

func TestSendFunctionKeyedStream(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	// The app's own CLI registers "orders", keyed by a Go function.
	if r := run(t, declareOrders, "", s.args("send", "orders", `{"id":1,"customer":"c1"}`)...); r.status != 0 {
		t.Fatalf("embedded send: status %d, stderr %q", r.status, r.stderr)
	}
	r := run(t, nil, "", s.args("send", "orders", `{"id":2,"customer":"c1"}`)...)
	wantFailure(t, r, exitUsage, `stream "orders" is keyed by a Go function`, "--key FIELD")
	// Naming the field that holds the key routes the JSON records; the
	// registry keeps the app's definition.
	if r := run(t, nil, "", s.args("send", "--key", "customer", "orders", `{"id":3,"customer":"c1"}`)...); r.status != 0 {
		t.Fatalf("send --key on a function-keyed stream: status %d, stderr %q", r.status, r.stderr)
	}
	d, err := core.LoadDefinition(context.Background(), s.client, s.keys.Registry(), "orders")
	if err != nil || d.KeyField != "" {
		t.Fatalf("registry after send --key: %+v, %v", d, err)
	}
}
