package rdb_test

import (
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/rdb"
)

// tag returns the Redis Cluster hash tag of key: what decides its slot.
func tag(key string) string {
	i := strings.IndexByte(key, '{')
	j := strings.IndexByte(key[i+1:], '}')
	if i < 0 || j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

func TestClusterLayout(t *testing.T) {
	s := rdb.NewKeySpace("", "shop")
	if got := s.Partition("orders", 3); got != "leat:s:{shop:orders:3}" {
		t.Fatalf("partition key %q", got)
	}
	seen := map[string]bool{}
	for p := range 16 {
		pk := s.Partition("orders", p)
		if seen[tag(pk)] {
			t.Fatalf("partitions share the tag %q", tag(pk))
		}
		seen[tag(pk)] = true
		if tag(s.Lock("orders", "totals", p)) != tag(pk) || tag(s.Fence("orders", "totals", p)) != tag(pk) || tag(s.Local("totals", "orders", p)) != tag(pk) {
			t.Fatalf("lock, fence or local key of partition %d is not in its slot", p)
		}
		// the commit script writes the outbox and the commit mark with the
		// acknowledgement; the relay script the partition and its marks
		if tag(s.Outbox("orders", "totals", p)) != tag(pk) || tag(s.Committed("orders", "totals", p)) != tag(pk) || tag(s.Relayed("orders", p)) != tag(pk) {
			t.Fatalf("outbox, commit mark or relay marks of partition %d are not in its slot", p)
		}
	}
	group := []string{s.Members("orders", "totals"), s.Assignment("orders", "totals"), s.Control("orders", "totals"),
		s.Admin("orders", "totals"), s.DeadLetter("orders", "totals"), s.Quarantine("orders", "totals")}
	for _, k := range group {
		if tag(k) != "shop:orders:totals" {
			t.Fatalf("group key %q has tag %q", k, tag(k))
		}
	}
	if tag(s.Registry()) != "shop" || tag(s.Leader()) != "shop" || tag(s.LeaderTerm()) != "shop" || tag(s.Processors()) != "shop" {
		t.Fatal("app keys do not share the app tag")
	}
	all := append(group, s.Registry(), s.Leader(), s.Processors(), s.LeaderTerm(), s.Partition("orders", 0), s.Lock("orders", "totals", 0), s.Fence("orders", "totals", 0),
		s.Outbox("orders", "totals", 0), s.Committed("orders", "totals", 0), s.Relayed("orders", 0))
	uniq := map[string]bool{}
	for _, k := range all {
		if uniq[k] || !strings.HasPrefix(k, "leat:") {
			t.Fatalf("key %q duplicated or outside the prefix", k)
		}
		uniq[k] = true
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"a", "orders.v2", "A_b-c"} {
		if rdb.CheckName("stream", ok) != nil {
			t.Errorf("%q rejected", ok)
		}
	}
	for _, bad := range []string{"", "a:b", "a{b}", "a b", strings.Repeat("x", 129)} {
		if rdb.CheckName("stream", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if !rdb.ValidPrefix("staging:leat") || rdb.ValidPrefix("a{b") || rdb.ValidPrefix("") {
		t.Error("ValidPrefix")
	}
}
