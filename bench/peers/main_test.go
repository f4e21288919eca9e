package main

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// watermill's subscribers end their read loops when their blocking read
	// returns, up to a read block after Close.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream.(*Subscriber).read"))
}

// TestRun runs every benchmark with tiny sizes on a redis-server it starts
// and checks that the table has each variant and ratio.
func TestRun(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not in PATH")
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"--events", "300", "--rounds", "1", "--bullmq=false"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{
		"machine: ", "Redis ", "go1.", "median of 1",
		"enqueue     leat/asynq ",
		"tasks       leat c10/asynq c10 ", "tasks       leat c50/raw ",
		"publish     leat/watermill ", "publish     leat/raw ", "subscribe   leat/raw+decode ", "subscribe   leat/watermill ",
		"memory: Redis used_memory per task, 300 tasks", "note: BullMQ skipped: --bullmq=false",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Enqueueing reports each side's CPU per task, for leat and asynq.
	for _, variant := range []string{"leat", "asynq"} {
		for _, figure := range []string{"Redis CPU µs/task", "client CPU µs/task"} {
			re := regexp.MustCompile(`(?m)^enqueue +` + regexp.QuoteMeta(variant) + ` +` + regexp.QuoteMeta(figure) + ` +[0-9.]+$`)
			if !re.MatchString(out.String()) {
				t.Errorf("output lacks enqueue %s %s:\n%s", variant, figure, out.String())
			}
		}
	}
	// The memory table has leat and asynq at every payload size, and a
	// comparison with asynq, the only peer.
	for _, p := range []string{"50", "100", "500", "5000"} {
		for _, variant := range []string{"leat", "asynq"} {
			re := regexp.MustCompile(`(?m)^` + p + ` +` + variant + ` +[0-9,]+ +[0-9,]+$`)
			if !re.MatchString(out.String()) {
				t.Errorf("memory table lacks %s at %s bytes:\n%s", variant, p, out.String())
			}
		}
		re := regexp.MustCompile(`(?m)^` + p + ` +leat/better peer +[0-9.]+ \(asynq\) +[0-9.]+ \(asynq\)$`)
		if !re.MatchString(out.String()) {
			t.Errorf("memory table lacks leat/better peer at %s bytes:\n%s", p, out.String())
		}
	}
}

func TestRunBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--only", "nope"}, `--only "nope"`},
		{[]string{"--redis", "redis://127.0.0.1:1", "--aof"}, "--aof starts a server of its own"},
		{[]string{"--events", "-1"}, "--events -1: want at least 1"},
		{[]string{"--rounds", "0"}, "--rounds 0: want at least 1"},
		{[]string{"--events", "3000000000"}, "events 3000000000 out of range"},
		{[]string{"extra"}, "want no arguments"},
	} {
		var out, errs bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
