package api_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

type charge struct {
	Customer string `json:"customer"`
	Amount   uint16 `json:"amount"`
}

// chargeV2 is charge after a redeploy that renamed amount to total.
type chargeV2 struct {
	Customer string `json:"customer"`
	Total    uint16 `json:"total"`
}

// declareCharges registers, as a program of app "shop" does on start,
// stream "payments" and task queue "charge" of records and payloads T.
func declareCharges[T any](t *testing.T, c *redis.Client, prefix string) {
	t.Helper()
	a := newApp(t, c, prefix)
	if _, err := stream.Declare[T](a, "payments", stream.KeyField("customer"), stream.Partitions(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := task.Declare[T, string](a, "charge"); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Served by a program without the declarations (leat serve), the API checks
// records and payloads against the schema the declaring program recorded
// in the registry, writes nothing of a refused request, and follows a
// redeploy's schema from the next request on.
func TestAPIChecksRecordedSchema(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	declareCharges[charge](t, c, prefix)
	srv := httptest.NewServer(api.NewHandler(newApp(t, c, prefix), api.Options{}))
	t.Cleanup(srv.Close)
	e := &env{client: c, prefix: prefix, srv: srv}
	ks := rdb.NewKeySpace(prefix, "shop")
	entries := func() int64 {
		return c.XLen(context.Background(), ks.Partition("payments", 0)).Val() + c.XLen(context.Background(), ks.Partition("payments", 1)).Val()
	}
	tasks := func() int { return len(c.Keys(context.Background(), ks.TaskPrefix("charge")+"*").Val()) }
	says := func(r reply, want string) {
		t.Helper()
		if msg, _ := r.body["error"].(string); !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}

	for _, bad := range []struct{ record, says string }{
		{`{"customer":"ada","amout":5}`, `unknown field "amout" (did you mean "amount"?); known: amount, customer`},
		{`{"customer":"ada","amount":70000}`, `field "amount": 70000 is out of range (0 to 65535)`},
		{`{"customer":"ada","amount":true}`, `field "amount": want an integer, got a boolean`},
	} {
		says(e.do(t, "POST", "/v1/streams/payments/events", bad.record).want(t, 400, "bad_record"), "record: "+bad.says)
		says(e.do(t, "POST", "/v1/streams/payments/events", `[{"customer":"bob","amount":1},`+bad.record+`]`).want(t, 400, "bad_record"), "record 1: "+bad.says)
		says(e.do(t, "POST", "/v1/queues/charge/tasks", `{"payload":`+bad.record+`}`).want(t, 400, "bad_task"), bad.says)
		says(e.do(t, "POST", "/v1/queues/charge/runsync?timeout=1s", `{"payload":`+bad.record+`}`).want(t, 400, "bad_task"), bad.says)
	}
	if n, m := entries(), tasks(); n != 0 || m != 0 {
		t.Fatalf("refused requests wrote %d entries and %d tasks", n, m)
	}
	e.do(t, "POST", "/v1/streams/payments/events", `{"customer":"ada","amount":5}`).want(t, 200, "")
	e.do(t, "POST", "/v1/queues/charge/tasks", `{"payload":{"customer":"ada","amount":5}}`).want(t, 200, "")

	// A redeploy's schema applies to the next request of the same server.
	declareCharges[chargeV2](t, c, prefix)
	says(e.do(t, "POST", "/v1/streams/payments/events", `{"customer":"ada","amount":5}`).want(t, 400, "bad_record"), `unknown field "amount"; known: customer, total`)
	says(e.do(t, "POST", "/v1/queues/charge/tasks", `{"payload":{"customer":"ada","amount":5}}`).want(t, 400, "bad_task"), `unknown field "amount"; known: customer, total`)
	e.do(t, "POST", "/v1/streams/payments/events", `{"customer":"ada","total":5}`).want(t, 200, "")
	e.do(t, "POST", "/v1/queues/charge/tasks", `{"payload":{"customer":"ada","total":5}}`).want(t, 200, "")
	if n, m := entries(), tasks(); n != 2 || m != 2 {
		t.Fatalf("%d entries and %d tasks, want the 2 of each accepted", n, m)
	}

	// Declared with types that take any JSON, nothing is checked.
	declareCharges[map[string]any](t, c, prefix)
	e.do(t, "POST", "/v1/streams/payments/events", `{"customer":"ada","amout":5}`).want(t, 200, "")
	e.do(t, "POST", "/v1/queues/charge/tasks", `{"payload":{"amout":5}}`).want(t, 200, "")
}

// A schema in the registry that no program wrote refuses the request with
// 500 bad_schema, naming the problem, and nothing is written.
func TestAPIRefusesCorruptSchema(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	declareCharges[charge](t, c, prefix)
	ks := rdb.NewKeySpace(prefix, "shop")
	for _, field := range []string{"stream/payments", "queue/charge"} {
		if err := c.HSet(context.Background(), ks.Schemas(), field, `{"version":1,"decoder":"stream","type":{"kind":"object","fields":[{"name":"a"}]}}`).Err(); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(api.NewHandler(newApp(t, c, prefix), api.Options{}))
	t.Cleanup(srv.Close)
	e := &env{client: c, prefix: prefix, srv: srv}
	for _, req := range [][2]string{
		{"/v1/streams/payments/events", `{"customer":"ada","amount":5}`},
		{"/v1/queues/charge/tasks", `{"payload":{"customer":"ada","amount":5}}`},
	} {
		r := e.do(t, "POST", req[0], req[1]).want(t, 500, "bad_schema")
		if msg, _ := r.body["error"].(string); !strings.Contains(msg, `field "a": no type`) {
			t.Errorf("%s: error %q does not name the problem", req[0], msg)
		}
	}
	if n := c.XLen(context.Background(), ks.Partition("payments", 0)).Val() + c.XLen(context.Background(), ks.Partition("payments", 1)).Val(); n != 0 {
		t.Fatalf("%d entries sent with a corrupt schema", n)
	}
}
