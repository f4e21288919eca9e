package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/urfave/cli/v2"
)

const (
	flagAddr     = "addr"
	flagToken    = "token"
	flagReadOnly = "read-only"
	flagMaxBody  = "max-body"
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
			"every request that writes. SIGINT or SIGTERM stops the server gracefully.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagAddr, Value: "127.0.0.1:8080", Usage: "listen on `HOST:PORT`"},
			&cli.StringFlag{Name: flagToken, EnvVars: []string{"LEAT_SERVE_TOKEN"},
				Usage: "require this bearer `TOKEN` of every request (prefer LEAT_SERVE_TOKEN: flags show in ps)"},
			&cli.BoolFlag{Name: flagReadOnly, Usage: "refuse every request that writes (403)", DisableDefaultText: true},
			&cli.Int64Flag{Name: flagMaxBody, Value: api.DefaultMaxBody, Usage: "largest request body in `BYTES` (413 beyond)"},
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
			a, err := openApp(c, setup)
			if err != nil {
				return err
			}
			defer a.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{
				Handler:           api.NewHandler(a, api.Options{Token: token, ReadOnly: c.Bool(flagReadOnly), MaxBody: c.Int64(flagMaxBody), Version: version()}),
				ReadHeaderTimeout: 10 * time.Second,
				BaseContext:       func(net.Listener) context.Context { return c.Context },
			}
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
