package api_test

import (
	"context"
	"testing"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// deadPath is the dead letters of processor totals of orders.
const deadPath = "/v1/streams/orders/processors/totals/dead"

// addDead writes a dead letter of totals as the DeadLetter policy does;
// without data when data is "".
func (e *env) addDead(t *testing.T, key, data string) string {
	t.Helper()
	vals := []any{executor.DeadStream, "orders", executor.DeadPartition, "2", executor.DeadID, "1-1",
		executor.DeadProcessor, "totals", executor.DeadError, "cannot total " + key,
		executor.DeadTime, "2026-01-02T03:04:05Z", executor.DeadDeliveries, "3"}
	if data != "" {
		vals = append(vals, "key", key, "codec", "json", "data", data, "h:trace", "t1")
	}
	id, err := e.client.XAdd(context.Background(), &redis.XAddArgs{Stream: rdb.NewKeySpace(e.prefix, "shop").DeadLetter("orders", "totals"), Values: vals}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	id1 := e.addDead(t, "o1", `{"id":"o1","amount":5}`)
	id2 := e.addDead(t, "o2", `{"id":"o2","amount":7}`)
	bad := e.addDead(t, "o3", "")
	part := rdb.NewKeySpace(e.prefix, "shop").Partition("orders", 2)

	r := e.do(t, "GET", deadPath, "").want(t, 200, "")
	if r.body["total"] != float64(3) || len(r.body["letters"].([]any)) != 3 || r.body["next"] != nil {
		t.Fatalf("listing %s", r.raw)
	}
	first := r.body["letters"].([]any)[0].(map[string]any)
	if first["id"] != id1 || first["entry_id"] != "1-1" || first["partition"] != float64(2) || first["key"] != "o1" ||
		first["error"] != "cannot total o1" || first["attempts"] != float64(3) || first["replayable"] != true || first["data"] != nil {
		t.Errorf("listed %v", first)
	}
	r = e.do(t, "GET", deadPath+"?limit=2", "").want(t, 200, "")
	if r.body["next"] != id2 {
		t.Errorf("first page %s", r.raw)
	}
	if r = e.do(t, "GET", deadPath+"?limit=2&after="+id2, "").want(t, 200, ""); len(r.body["letters"].([]any)) != 1 {
		t.Errorf("second page %s", r.raw)
	}
	e.do(t, "GET", deadPath+"?limit=0", "").want(t, 400, "bad_limit")
	e.do(t, "GET", deadPath+"?limit=101", "").want(t, 400, "bad_limit")
	e.do(t, "GET", deadPath+"?after=x", "").want(t, 400, "bad_cursor")
	e.do(t, "GET", "/v1/streams/orders/processors/to.tals:x/dead", "").want(t, 400, "bad_name")

	r = e.do(t, "GET", deadPath+"/"+id1, "").want(t, 200, "")
	if rec, _ := r.body["record"].(map[string]any); rec["id"] != "o1" || rec["amount"] != float64(5) || r.body["headers"].(map[string]any)["trace"] != "t1" {
		t.Errorf("shown %s", r.raw)
	}
	e.do(t, "GET", deadPath+"/1-1", "").want(t, 404, "unknown_dead_letter")
	e.do(t, "GET", deadPath+"/nope", "").want(t, 404, "unknown_dead_letter")

	// Writes: JSON only, ids or all, not both nor neither.
	e.do(t, "POST", deadPath+"/replay", `{"ids":["`+id1+`"]}`, "Content-Type", "text/plain").want(t, 415, "bad_content_type")
	e.do(t, "POST", deadPath+"/replay", `{"ids":["`+id1+`"],"all":true}`).want(t, 400, "bad_request")
	e.do(t, "POST", deadPath+"/replay", `{}`).want(t, 400, "bad_request")
	e.do(t, "POST", deadPath+"/replay", `{"ids":["x"]}`).want(t, 400, "bad_request")
	e.do(t, "POST", deadPath+"/replay", `{"idz":[]}`).want(t, 400, "bad_json")
	e.do(t, "POST", "/v1/streams/nope/processors/totals/dead/replay", `{"all":true}`).want(t, 404, "unknown_stream")
	if n := e.client.XLen(context.Background(), part).Val(); n != 0 {
		t.Fatalf("partition holds %d entries after refused replays", n)
	}

	r = e.do(t, "POST", deadPath+"/replay", `{"ids":["`+id1+`"]}`).want(t, 200, "")
	if r.body["replayed"] != float64(1) || len(r.body["missing"].([]any)) != 0 {
		t.Errorf("replay %s", r.raw)
	}
	r = e.do(t, "POST", deadPath+"/replay", `{"ids":["`+id1+`"]}`).want(t, 200, "")
	if r.body["replayed"] != float64(0) || r.body["missing"].([]any)[0] != id1 {
		t.Errorf("replay again %s", r.raw)
	}
	msgs := e.client.XRange(context.Background(), part, "-", "+").Val()
	if len(msgs) != 1 || msgs[0].Values["key"] != "o1" || msgs[0].Values["data"] != `{"id":"o1","amount":5}` || msgs[0].Values["h:trace"] != "t1" {
		t.Errorf("partition %v", msgs)
	}
	e.do(t, "POST", deadPath+"/replay", `{"ids":["`+bad+`"]}`).want(t, 409, "not_replayable")

	r = e.do(t, "DELETE", deadPath+"?id="+bad, "").want(t, 200, "")
	if r.body["purged"] != float64(1) {
		t.Errorf("purge %s", r.raw)
	}
	r = e.do(t, "DELETE", deadPath, `{"all":true}`).want(t, 200, "")
	if r.body["purged"] != float64(1) {
		t.Errorf("purge all %s", r.raw)
	}
	if n := e.client.XLen(context.Background(), rdb.NewKeySpace(e.prefix, "shop").DeadLetter("orders", "totals")).Val(); n != 0 {
		t.Errorf("%d dead letters left", n)
	}
}
