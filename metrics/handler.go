package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readyTimeout bounds one readiness check.
const readyTimeout = 2 * time.Second

// NewHandler returns an HTTP handler serving:
//
//   - /metrics: x's registry in the Prometheus exposition format;
//   - /healthz: 200 "ok" while the process serves HTTP (liveness);
//   - /readyz: 200 "ready" when ready returns nil, else 503 and its error
//     (readiness); ready nil is always ready.
//
// Mount it in your own server, or serve it as "leat worker --metrics-addr"
// does. It starts nothing by itself.
func NewHandler(x *Exporter, ready func(context.Context) error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(x.Registry(), promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Errors of WorkerReady.
var (
	// ErrNoExecutors: the worker runs no executor (not started, or stopped).
	ErrNoExecutors = errors.New("metrics: the worker runs no executor")
	// ErrNotSettled: an executor does not hold every partition assigned to it.
	ErrNotSettled = errors.New("metrics: an executor does not hold what it was assigned")
)

// WorkerReady returns a readiness check for NewHandler: ready when Redis
// answers ping and each executor that executors returns holds what it was
// assigned (executor.Settled). With an app: WorkerReady(a.Executors, a.Ping).
func WorkerReady(executors func() []executor.Executor, ping func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := ping(ctx); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		execs := executors()
		if len(execs) == 0 {
			return ErrNoExecutors
		}
		for _, e := range execs {
			ok, err := e.Settled(ctx)
			if err != nil {
				return fmt.Errorf("processor %s/%s: %w", e.Stream(), e.Processor(), err)
			}
			if !ok {
				return fmt.Errorf("%w: processor %s/%s", ErrNotSettled, e.Stream(), e.Processor())
			}
		}
		return nil
	}
}

// AllReady returns a readiness check for NewHandler that is ready when
// every check is (nil checks are skipped); it returns the first error. A
// worker running a subprocess handler uses AllReady(ping, exec readiness).
func AllReady(checks ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, c := range checks {
			if c == nil {
				continue
			}
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}
