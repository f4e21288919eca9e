package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Every page gets 20 views in each of the three minutes, printed once
// each after the minute closed; the minute still open is read with Get.
func TestPageviews(t *testing.T) {
	c, prefix := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, c, prefix, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	want := `12:00 /         20 views
12:00 /docs     20 views
12:00 /pricing  20 views
12:01 /         20 views
12:01 /docs     20 views
12:01 /pricing  20 views
12:02 /         20 views
12:02 /docs     20 views
12:02 /pricing  20 views
12:04 /docs still open: 1 views so far
`
	if got := out.String(); got != want {
		t.Fatalf("output:\n%s\nwant:\n%s", got, strings.TrimSpace(want))
	}
}
