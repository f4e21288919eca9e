package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// User creates a Redis user on the shared server with the ACL rules given
// (as in ACL SETUSER: "+@all", "-@dangerous", "~prefix:*", ...; the user is
// turned on and given a password) and returns the server's URL with the
// user's credentials. The user is deleted when tb ends.
func User(tb testing.TB, rules ...string) string {
	tb.Helper()
	opt, err := redis.ParseURL(URL(tb))
	if err != nil {
		tb.Fatalf("redistest: bad redis URL: %v", err)
	}
	admin := redis.NewClient(opt)
	defer admin.Close()
	name := fmt.Sprintf("u%d", prefixSeq.Add(1))
	secret := make([]byte, 12)
	_, _ = rand.Read(secret)
	pass := hex.EncodeToString(secret)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + pass}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(ctx, args...).Err(); err != nil {
		tb.Fatalf("redistest: ACL SETUSER %s: %v", name, err)
	}
	tb.Cleanup(func() {
		c := redis.NewClient(opt)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Do(ctx, "ACL", "DELUSER", name)
	})
	u, err := url.Parse(URL(tb))
	if err != nil {
		tb.Fatalf("redistest: bad redis URL: %v", err)
	}
	u.User = url.UserPassword(name, pass)
	return u.String()
}
