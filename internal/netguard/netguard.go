// Package netguard keeps outgoing requests of the runtime (webhook
// deliveries) away from internal addresses: loopback, private, link-local
// (cloud metadata services at 169.254.169.254), unspecified, multicast and
// other special-purpose ranges, unless an allowlist names them. The check
// runs on the address actually dialed, after name resolution, so a host
// name that resolves to 127.0.0.1 is refused as the literal is.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// ErrForbidden is matched by the error of a target refused because its
// address is internal and not allowed.
var ErrForbidden = errors.New("target address not allowed")

// A Policy says which internal addresses may be reached. The zero value
// (and nil) allows none.
type Policy struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
}

// New returns the policy that allows the entries of allow, each an IP
// address (127.0.0.1, ::1), a CIDR prefix (10.0.0.0/8, fc00::/7) or a host
// name (hooks.internal: any address it resolves to).
func New(allow []string) (*Policy, error) {
	p := &Policy{}
	for _, raw := range allow {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		if pre, err := netip.ParsePrefix(e); err == nil {
			p.prefixes = append(p.prefixes, pre.Masked())
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			a = a.Unmap()
			p.prefixes = append(p.prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if !validHost(e) {
			return nil, fmt.Errorf("allowed target %q: want an IP address, a CIDR prefix or a host name", raw)
		}
		if p.hosts == nil {
			p.hosts = map[string]bool{}
		}
		p.hosts[strings.ToLower(strings.TrimSuffix(e, "."))] = true
	}
	return p, nil
}

// validHost reports whether s looks like a DNS host name.
func validHost(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// special are ranges refused besides those netip classifies.
var special = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4
// address in their last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// internal says what kind of internal address a is, or "" for a public one.
func internal(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsPrivate():
		return "a private address"
	}
	if nat64.Contains(a) {
		b := a.As16()
		if w := internal(netip.AddrFrom4([4]byte(b[12:]))); w != "" {
			return "a NAT64 address of " + w
		}
	}
	for _, s := range special {
		if s.prefix.Contains(a) {
			return s.what
		}
	}
	return ""
}

// CheckAddr returns nil when a is public or allowed, else an error matching
// ErrForbidden that says why.
func (p *Policy) CheckAddr(a netip.Addr) error {
	w := internal(a)
	if w == "" {
		return nil
	}
	if p != nil {
		for _, pre := range p.prefixes {
			if pre.Contains(a.Unmap()) {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %s is %s", ErrForbidden, a, w)
}

// CheckHost checks a URL's host (without port): a literal IP address as
// CheckAddr does; a name is allowed here and checked when dialed.
func (p *Policy) CheckHost(host string) error {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return nil
	}
	return p.CheckAddr(a)
}

// allowsHost reports whether the allowlist names host.
func (p *Policy) allowsHost(host string) bool {
	return p != nil && p.hosts[strings.ToLower(strings.TrimSuffix(host, "."))]
}

// DialContext returns a dial function for an http.Transport that dials with
// d and refuses, before connecting, every address the policy does not
// allow: each address a name resolves to is checked as it is dialed. A host
// name the allowlist names is dialed whatever it resolves to.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	guarded := *d
	guarded.Control = func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrForbidden, address, err)
		}
		return p.CheckAddr(ap.Addr())
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil && p.allowsHost(host) {
			return d.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
}
