package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/urfave/cli/v2"
)

const (
	flagAddr     = "addr"
	flagToken    = "token"
	flagReadOnly = "read-only"
	flagMaxBody  = "max-body"
	flagMaxConns = "max-conns"
	flagHosts    = "allowed-host"
	flagFollow   = "max-followers"
)

// serveShutdown bounds the wait for requests in flight when serve stops;
// streams of server-sent events are cut then.
const serveShutdown = 10 * time.Second

func serveCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the app's dashboard and JSON API over HTTP: send records, enqueue and run tasks, follow them, inspect",
		Description: "The dashboard is at / (open http://HOST:PORT/ in a browser); the endpoints are\n" +
			"under /v1 (see api/openapi.yaml). With --token (or\n" +
			"LEAT_SERVE_TOKEN) every request needs \"Authorization: Bearer TOKEN\"; a token is\n" +
			"required to listen on an address other than loopback. --read-only answers 403 to\n" +
			"every request that writes. Without a token only loopback host names (localhost,\n" +
			"127.0.0.1, [::1]) are answered: name others with --allowed-host. Writes must come\n" +
			"from the dashboard or from clients that are not browsers, with a JSON body.\n" +
			"SIGINT or SIGTERM stops the server gracefully.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagAddr, Value: "127.0.0.1:8080", Usage: "listen on `HOST:PORT`"},
			&cli.StringFlag{Name: flagToken, EnvVars: []string{"LEAT_SERVE_TOKEN"},
				Usage: "require this bearer `TOKEN` of every request (prefer LEAT_SERVE_TOKEN: flags show in ps)"},
			&cli.BoolFlag{Name: flagReadOnly, Usage: "refuse every request that writes (403)", DisableDefaultText: true},
			&cli.Int64Flag{Name: flagMaxBody, Value: api.DefaultMaxBody, Usage: "largest request body in `BYTES` (413 beyond)"},
			&cli.IntFlag{Name: flagMaxConns, EnvVars: []string{"LEAT_SERVE_MAX_CONNS"}, Value: defaultLimits.maxConns,
				Usage: "serve at most `N` connections at once; more wait to be accepted"},
			&cli.IntFlag{Name: flagFollow, EnvVars: []string{"LEAT_SERVE_MAX_FOLLOWERS"}, Value: api.DefaultMaxFollowers,
				Usage: "follow at most `N` task event streams at once, over all tasks (503 beyond)"},
			poolsFlag(),
			&cli.StringSliceFlag{Name: flagHosts, EnvVars: []string{"LEAT_SERVE_ALLOWED_HOSTS"},
				Usage: "also answer requests for host `NAME` (repeatable; the name a proxy serves the API under); " +
					"with a token, answer only loopback names and these"},
			helpFlag(),
		},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c); err != nil {
				return err
			}
			addr, token := c.String(flagAddr), c.String(flagToken)
			if err := checkListen(addr, token); err != nil {
				return err
			}
			if c.Int64(flagMaxBody) <= 0 {
				return usageErrorf("--%s %d must be positive", flagMaxBody, c.Int64(flagMaxBody))
			}
			limits := defaultLimits
			if limits.maxConns = c.Int(flagMaxConns); limits.maxConns <= 0 {
				return usageErrorf("--%s %d must be positive", flagMaxConns, limits.maxConns)
			}
			if c.Int(flagFollow) <= 0 {
				return usageErrorf("--%s %d must be positive", flagFollow, c.Int(flagFollow))
			}
			hosts, err := allowedHosts(c.StringSlice(flagHosts))
			if err != nil {
				return err
			}
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			h := api.NewHandler(a, api.Options{Token: token, AllowedHosts: hosts, ReadOnly: c.Bool(flagReadOnly),
				MaxBody: c.Int64(flagMaxBody), MaxFollowers: c.Int(flagFollow), Version: version()})
			h, stopPlane, err := withPlane(c, a, h, token)
			if err != nil {
				ln.Close()
				return err
			}
			defer stopPlane()
			srv, ln := newServer(c.Context, h, ln, limits)
			mode := ""
			if c.Bool(flagReadOnly) {
				mode = " (read-only)"
			}
			fmt.Fprintf(c.App.ErrWriter, "serving app %q on http://%s%s: dashboard at http://%s/, API under /v1\n", a.Name(), ln.Addr(), mode, ln.Addr())
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-c.Context.Done():
			}
			ctx, cancel := context.WithTimeout(context.Background(), serveShutdown)
			defer cancel()
			err = srv.Shutdown(ctx)
			if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
				err = serr
			}
			return err
		},
	}
}

// serverLimits bound what a client holds of the server: how long it may
// take to send a request and to read the answer, how long an idle
// keep-alive connection stays open, and how many connections are served
// at once. The API lifts the read and write timeouts for the streams of
// server-sent events and for runsync, which answer later by design.
type serverLimits struct {
	readHeader time.Duration // the request's header
	read       time.Duration // the whole request, body included
	write      time.Duration // from the request's header to the end of the answer
	idle       time.Duration // a keep-alive connection between requests
	maxConns   int
}

// defaultLimits let a slow client send a full body (1 MiB at 35 KiB/s) and
// a dashboard keep its connection between polls, and no more.
var defaultLimits = serverLimits{
	readHeader: 10 * time.Second,
	read:       30 * time.Second,
	write:      60 * time.Second,
	idle:       2 * time.Minute,
	maxConns:   1024,
}

// newServer returns the server of h with limits l, and ln limited to
// l.maxConns connections; requests' contexts derive from ctx.
func newServer(ctx context.Context, h http.Handler, ln net.Listener, l serverLimits) (*http.Server, net.Listener) {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.readHeader,
		ReadTimeout:       l.read,
		WriteTimeout:      l.write,
		IdleTimeout:       l.idle,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}, limitListener(ln, l.maxConns)
}

// allowedHosts checks the --allowed-host names.
func allowedHosts(names []string) ([]string, error) {
	var hosts []string
	for _, n := range names {
		for _, h := range strings.Split(n, ",") {
			h = strings.TrimSpace(h)
			if h == "" || strings.ContainsAny(h, ":/ ") && net.ParseIP(h) == nil {
				return nil, usageErrorf("--%s %q: want a host name without port or scheme, such as leat.example.com", flagHosts, n)
			}
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// checkListen refuses an address beyond loopback without a token.
func checkListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--%s %q: %v", flagAddr, addr, err)
	}
	if token != "" || isLoopback(host) {
		return nil
	}
	return usageErrorf("--%s %q listens beyond loopback: set a token with LEAT_SERVE_TOKEN (or --%s) so that "+
		"only its holders reach the API, or listen on 127.0.0.1", flagAddr, addr, flagToken)
}

// isLoopback reports whether host names only loopback interfaces ("" means
// all interfaces).
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// limitListener returns ln accepting at most n connections at once: while
// n are open, Accept waits for one to close, and the connections beyond
// wait in the system's backlog.
func limitListener(ln net.Listener, n int) net.Listener {
	return &limitedListener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	slots     chan struct{} // one per open connection
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn frees its slot when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
