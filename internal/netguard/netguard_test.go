package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Internal addresses are refused, saying what they are; public ones and
// those the allowlist names are taken.
func TestCheckAddr(t *testing.T) {
	none, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"169.254.169.254":  "link-local",
		"127.0.0.1":        "loopback",
		"::1":              "loopback",
		"::ffff:127.0.0.1": "loopback",
		"10.1.2.3":         "private",
		"172.16.0.1":       "private",
		"192.168.1.1":      "private",
		"fd00::1":          "private",
		"fe80::1":          "link-local",
		"0.0.0.0":          "unspecified",
		"::":               "unspecified",
		"224.0.0.1":        "multicast",
		"ff02::1":          "multicast",
		"100.64.0.1":       "carrier-grade NAT",
		"64:ff9b::7f00:1":  "NAT64 address of a loopback",
		"255.255.255.255":  "broadcast",
	} {
		err := none.CheckAddr(netip.MustParseAddr(addr))
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", addr, err, want)
		}
	}
	for _, addr := range []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"} {
		if err := none.CheckAddr(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	allow, err := New([]string{"127.0.0.1", "10.0.0.0/8", "::1", "hooks.internal"})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"127.0.0.1", "::ffff:127.0.0.1", "10.200.0.1", "::1"} {
		if err := allow.CheckAddr(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("allowed %s: %v", addr, err)
		}
	}
	if err := allow.CheckAddr(netip.MustParseAddr("127.0.0.2")); !errors.Is(err, ErrForbidden) {
		t.Errorf("127.0.0.2 outside the allowlist: %v", err)
	}
	if _, err := New([]string{"not a host/x"}); err == nil {
		t.Error("a bad entry was taken")
	}
}

// The dialer checks the address a name resolves to: localhost is refused
// without an allowlist, and dialed when the allowlist names it or its
// address.
func TestDialChecksResolvedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	target := net.JoinHostPort("localhost", port)
	none, _ := New(nil)
	if c, err := none.DialContext(&net.Dialer{})(context.Background(), "tcp4", target); !errors.Is(err, ErrForbidden) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("localhost without an allowlist: %v", err)
	}
	for _, allow := range [][]string{{"localhost"}, {"127.0.0.0/8"}} {
		p, _ := New(allow)
		c, err := p.DialContext(&net.Dialer{})(context.Background(), "tcp4", target)
		if err != nil {
			t.Fatalf("allowed %v: %v", allow, err)
		}
		c.Close()
	}
}
