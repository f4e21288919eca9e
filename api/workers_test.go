package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// GET /v1/workers answers the control plane's live workers and
// deployments from Redis, behind the API's token.
func TestWorkersList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{Token: "api-token"})
	e.do(t, "GET", "/v1/workers", "").want(t, 401, "unauthorized")
	r := e.do(t, "GET", "/v1/workers", "", "Authorization", "Bearer api-token").want(t, 200, "")
	if r.raw != `{"workers":[],"deployments":[]}`+"\n" {
		t.Fatalf("no control plane: %s", r.raw)
	}
	ks := rdb.NewKeySpace(e.prefix, "shop")
	ctx := context.Background()
	rec, _ := json.Marshal(map[string]any{"id": "gpu-0123456789abcdef", "pool": "gpu", "health": "ok", "queues": []string{"work"}})
	e.client.Set(ctx, ks.PlaneWorker("gpu-0123456789abcdef"), rec, time.Minute)
	e.client.ZAdd(ctx, ks.PlaneWorkers(), redisZ(time.Now().Add(time.Minute)))
	e.client.HSet(ctx, ks.PlaneRevisions(), "ml", `{"deployment":"ml","revision":"`+strings.Repeat("a", 40)+`"}`)
	r = e.do(t, "GET", "/v1/workers", "", "Authorization", "Bearer api-token").want(t, 200, "")
	ws, _ := r.body["workers"].([]any)
	ds, _ := r.body["deployments"].([]any)
	if len(ws) != 1 || ws[0].(map[string]any)["health"] != "ok" || len(ds) != 1 || ds[0].(map[string]any)["deployment"] != "ml" {
		t.Fatalf("workers: %s", r.raw)
	}
}

func redisZ(expires time.Time) redis.Z {
	return redis.Z{Score: float64(expires.UnixMilli()), Member: "gpu-0123456789abcdef"}
}
