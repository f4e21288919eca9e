package redistest

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Blocked returns how many connections to c's server are blocked with
// command cmd (CLIENT LIST: flag b, cmd=cmd, in lower case): waiting on a
// blocking read, or held by a CLIENT PAUSE.
func Blocked(tb testing.TB, c *redis.Client, cmd string) int {
	tb.Helper()
	list, err := c.ClientList(tb.Context()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(list, "\n") {
		if strings.Contains(l, " cmd="+cmd+" ") && strings.Contains(l, " flags=b ") {
			n++
		}
	}
	return n
}
