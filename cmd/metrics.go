package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/metrics"
	"github.com/urfave/cli/v2"
)

// flagMetricsAddr names the worker's metrics flag.
const flagMetricsAddr = "metrics-addr"

func metricsAddrFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    flagMetricsAddr,
		Usage:   "`ADDRESS` (host:port, e.g. :9090) where the worker serves /metrics (Prometheus), /healthz and /readyz",
		EnvVars: []string{envName(flagMetricsAddr)},
	}
}

// checkMetricsAddr validates --metrics-addr ("" when not given).
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageErrorf("--%s %q: want host:port, such as :9090 or 127.0.0.1:9090", flagMetricsAddr, addr)
	}
	return nil
}

// metricsServer serves a worker's metrics and health over HTTP.
type metricsServer struct {
	srv  *http.Server
	done chan struct{}
}

// serveMetrics listens on addr and serves x's metrics, with lag and pending
// of the streams of the processors selected ("stream/processor"), the
// figures of every task queue of the app, and the health of the worker of a.
func serveMetrics(addr string, x *metrics.Exporter, a *app.App, selected []string) (*metricsServer, error) {
	return serveMetricsReady(addr, x, a, selected, nil, metrics.WorkerReady(a.Executors, a.Ping))
}

// serveMetricsReady is serveMetrics with a readiness check of its own,
// gathering the figures of the task queues named (all when none).
func serveMetricsReady(addr string, x *metrics.Exporter, a *app.App, selected, queues []string, ready func(context.Context) error) (*metricsServer, error) {
	var streams []string
	for _, full := range selected {
		s, _, _ := strings.Cut(full, "/")
		streams = append(streams, s)
	}
	in := inspect.New(a.Client(), a.Config().KeyPrefix, a.Name())
	x.Gather(in, func() []string { return streams })
	x.GatherQueues(in, func() []string { return queues })
	x.Worker(a.Name(), a.IsLeader, ready)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagMetricsAddr, err)
	}
	m := &metricsServer{
		srv: &http.Server{
			Handler:           metrics.NewHandler(x, ready),
			ReadHeaderTimeout: 5 * time.Second,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Logger().Error("metrics server stopped", "error", err)
		}
	}()
	return m, nil
}

// close stops the server, letting requests in flight finish for a second.
func (m *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	<-m.done
}
