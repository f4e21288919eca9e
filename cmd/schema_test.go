package cmd

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

type charge struct {
	Customer string `json:"customer"`
	Amount   uint16 `json:"amount"`
	Note     string `json:"note"`
}

// chargeV2 is charge after a redeploy that renamed amount to total.
type chargeV2 struct {
	Customer string `json:"customer"`
	Total    uint16 `json:"total"`
}

// redeploy registers, as a program of app "shop" would on start, stream
// "payments" and task queue "charge" with records and payloads of type T.
func redeploy[T any](t *testing.T, s shop) {
	t.Helper()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := stream.Declare[T](a, "payments", stream.KeyField("customer"), stream.Partitions(4)); err != nil {
		t.Fatal(err)
	}
	if _, err := task.Declare[T, string](a, "charge"); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The standalone binary, which holds no Go types, checks records and
// payloads against the schema the program that declared the stream and the
// queue recorded in the registry: it refuses what the readers would not
// decode, naming the field, and writes nothing; a redeploy's schema
// replaces the one before; a declaration whose type takes any JSON removes
// it.
func TestStandaloneChecksRecordedSchema(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	redeploy[charge](t, s)
	tasks := func() int {
		return len(s.client.Keys(context.Background(), s.keys.TaskPrefix("charge")+"*").Val())
	}

	for _, c := range []struct{ record, says string }{
		{`{"customer":"ada","amout":5}`, `unknown field "amout" (did you mean "amount"?); known: amount, customer, note`},
		{`{"customer":"ada","amount":"5"}`, `field "amount": want an integer, got a string`},
		{`{"customer":"ada","amount":70000}`, `field "amount": 70000 is out of range (0 to 65535)`},
		{`{"customer":"ada","amount":-1}`, `field "amount": -1 is out of range (0 to 65535)`},
	} {
		wantFailure(t, run(t, nil, "", s.args("send", "payments", c.record)...), 2, "record: "+c.says)
		wantFailure(t, run(t, nil, "", s.args("enqueue", "charge", c.record)...), 2, "payload 0: "+c.says)
		if r := run(t, nil, c.record+"\n", s.args("sendmany", "payments", "-")...); r.status != 2 || r.stderr != "line 1: "+c.says+"\n" {
			t.Errorf("sendmany %s: %+v", c.record, r)
		}
		if r := run(t, nil, `{"customer":"bob"}`+"\n"+c.record+"\n", s.args("enqueue", "charge", "--file", "-")...); r.status != 2 || r.stderr != "line 2: "+c.says+"\n" {
			t.Errorf("enqueue --file %s: %+v", c.record, r)
		}
	}
	if n := s.total(t, "payments", 4); n != 0 {
		t.Fatalf("refused sends wrote %d entries", n)
	}
	if n := tasks(); n != 0 {
		t.Fatalf("refused enqueues wrote %d tasks", n)
	}
	// encoding/json, which decodes payloads, matches names in any case; the
	// stream's reader does not.
	if r := run(t, nil, "", s.args("enqueue", "charge", `{"customer":"ada","Amount":5}`)...); r.status != 0 {
		t.Fatalf("a payload with a name in another case: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("send", "payments", `{"customer":"ada","Amount":5}`)...), 2, `unknown field "Amount"`)

	if r := run(t, nil, "", s.args("send", "payments", `{"customer":"ada","amount":5,"note":"x"}`)...); r.status != 0 {
		t.Fatalf("a record of the type: %+v", r)
	}
	if r := run(t, nil, "", s.args("enqueue", "charge", `{"customer":"ada","amount":5}`)...); r.status != 0 {
		t.Fatalf("a payload of the type: %+v", r)
	}
	if n := s.total(t, "payments", 4); n != 1 {
		t.Fatalf("%d entries, want the one sent", n)
	}

	// A redeploy renames amount to total: the new schema replaces the old.
	redeploy[chargeV2](t, s)
	wantFailure(t, run(t, nil, "", s.args("send", "payments", `{"customer":"ada","amount":5}`)...), 2, `unknown field "amount"; known: customer, total`)
	wantFailure(t, run(t, nil, "", s.args("enqueue", "charge", `{"customer":"ada","amount":5}`)...), 2, `unknown field "amount"; known: customer, total`)
	if r := run(t, nil, "", s.args("send", "payments", `{"customer":"ada","total":5}`)...); r.status != 0 {
		t.Fatalf("a record of the new type: %+v", r)
	}
	if r := run(t, nil, "", s.args("enqueue", "charge", `{"customer":"ada","total":5}`)...); r.status != 0 {
		t.Fatalf("a payload of the new type: %+v", r)
	}

	// Declared with types that take any JSON: no schema, anything goes.
	redeploy[map[string]any](t, s)
	if n := s.client.HLen(context.Background(), s.keys.Schemas()).Val(); n != 0 {
		t.Fatalf("%d schemas left after a declaration of types that take any JSON", n)
	}
	if r := run(t, nil, "", s.args("send", "payments", `{"customer":"ada","amout":5}`)...); r.status != 0 {
		t.Fatalf("a record of a stream without a schema: %+v", r)
	}
	if r := run(t, nil, "", s.args("enqueue", "charge", `{"amout":5}`)...); r.status != 0 {
		t.Fatalf("a payload of a queue without a schema: %+v", r)
	}
}

// A schema in the registry that no program wrote (corrupt, hand-edited)
// refuses every record rather than letting them all in.
func TestStandaloneRefusesCorruptSchema(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	redeploy[charge](t, s)
	for _, field := range []string{"stream/payments", "queue/charge"} {
		if err := s.client.HSet(context.Background(), s.keys.Schemas(), field, `{"version":1,"decoder":"stream","type":{"kind":"nothing"}}`).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"send", "payments", `{"customer":"ada","amount":5}`},
		{"enqueue", "charge", `{"customer":"ada","amount":5}`},
	} {
		r := run(t, nil, "", s.args(args...)...)
		if r.status == 0 || !strings.Contains(r.stderr, `unknown kind "nothing"`) {
			t.Errorf("%s with a corrupt schema: %+v", args[0], r)
		}
	}
	if n := s.total(t, "payments", 4); n != 0 {
		t.Fatalf("%d entries sent with a corrupt schema", n)
	}
}
