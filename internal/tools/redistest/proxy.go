package redistest

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Proxy forwards TCP connections to a Redis server and can freeze them:
// while frozen no byte moves in either direction, yet every socket stays
// open, as on a network link that stopped carrying traffic (a cable pulled
// between two switches, a stalled NAT), which a client only notices through
// its own timeouts. Connections made while frozen are accepted and frozen
// too.
type Proxy struct {
	ln     net.Listener
	target string // host:port of the server

	mu     sync.Mutex
	frozen bool
	thawed chan struct{} // closed on Thaw; replaced on Freeze
	conns  map[net.Conn]struct{}
	closed bool

	cutMarker []byte // CutReplies: a reply holding it is dropped with its connection
	cutsLeft  int
	cutEvery  int // CutEvery: every cutEvery-th reply chunk is dropped (0: none)
	chunks    int // reply chunks seen while cutEvery is set
	cuts      int // replies cut so far

	held atomic.Int64 // chunks read and not yet written on

	wg sync.WaitGroup
}

// NewProxy starts a proxy on a free loopback port in front of the Redis
// server at url (redis:// only). It is closed when the test ends.
func NewProxy(tb testing.TB, url string) *Proxy {
	tb.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("redistest: proxy target: %v", err)
	}
	if strings.HasPrefix(opt.Addr, "/") || opt.Network == "unix" {
		tb.Fatalf("redistest: proxy target must be a TCP address, not %s", opt.Addr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: opt.Addr, thawed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.thawed)
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// URL returns the proxy's address as a redis:// URL.
func (p *Proxy) URL() string { return "redis://" + p.ln.Addr().String() }

// Freeze stops all traffic through the proxy, keeping connections open.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen = true
		p.thawed = make(chan struct{})
	}
}

// Thaw lets traffic flow again; what was held back is delivered.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

// Held returns the number of chunks read from one side and not yet written
// to the other: after Thaw, 0 once everything held back was delivered.
func (p *Proxy) Held() int { return int(p.held.Load()) }

// Close closes the listener and every connection, and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Thaw()
	p.wg.Wait()
}

// gate returns a channel that is closed when traffic may flow.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.thawed
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		go p.pipe(server, client, false)
		go p.pipe(client, server, true)
	}
}

// CutReplies makes the proxy drop the next n chunks of server replies that
// contain marker, closing their connection (both ends) instead of
// forwarding them: the server ran the command, the client never hears of
// it, as when a link or the server fails between the two. A marker split
// across two reads of the proxy is not seen; tests keep it short.
func (p *Proxy) CutReplies(marker []byte, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutMarker, p.cutsLeft = append([]byte(nil), marker...), n
}

// CutEvery makes the proxy drop every n-th chunk of server replies, whatever
// it holds, closing its connection (both ends), until CutEvery(0): the
// commands of those replies ran, their clients never hear of it.
func (p *Proxy) CutEvery(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutEvery, p.chunks = n, 0
}

// Cuts returns the number of replies cut so far (CutReplies, CutEvery).
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// cut reports whether the reply chunk b is to be dropped (CutReplies,
// CutEvery).
func (p *Proxy) cut(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutEvery > 0 {
		p.chunks++
		if p.chunks%p.cutEvery == 0 {
			p.cuts++
			return true
		}
	}
	if p.cutsLeft == 0 || !bytes.Contains(b, p.cutMarker) {
		return false
	}
	p.cutsLeft--
	p.cuts++
	return true
}

// pipe copies from src to dst, holding each chunk back while frozen;
// fromServer marks the direction of replies (CutReplies).
func (p *Proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.held.Add(1)
			<-p.gate()
			if fromServer && p.cut(buf[:n]) {
				p.held.Add(-1)
				return // the deferred closes end both ends
			}
			_, werr := dst.Write(buf[:n])
			p.held.Add(-1)
			if werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: the deferred closes end the other direction too
		}
	}
}
