package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/redis/go-redis/v9"
)

// describeMachine returns the CPU model, core count, load, Redis and Go
// versions of this run, on one line.
func describeMachine(ctx context.Context, client *redis.Client) (string, error) {
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("INFO server: %w", err)
	}
	redisVersion := infoField(info, "redis_version")
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	return fmt.Sprintf("%s, %d cores (%s/%s), load average %s; Redis %s; %s",
		cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, load, redisVersion, runtime.Version()), nil
}

// cpuModel returns the "model name" of /proc/cpuinfo, or "unknown CPU".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// infoField returns the value of field in an INFO reply.
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "unknown"
}
