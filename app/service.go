package app

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// A Service is a long-running part of the worker other than the
// processors, such as a task queue's workers: RunProcessors runs every
// attached service beside the executors.
type Service interface {
	// Name names the service in logs; it is unique within the app.
	Name() string
	// Run runs the service until ctx is done and returns nil then. ctx
	// ends when the executors stop, before background tasks. An error
	// stops the whole worker, like a processor's halt.
	Run(ctx context.Context) error
}

// Attach adds s to the services of the app's workers. Attach a service
// before the worker starts.
func (a *App) Attach(s Service) error {
	if s == nil {
		return fmt.Errorf("attach: service is nil")
	}
	if err := rdb.CheckName("service", s.Name()); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range a.services {
		if o.Name() == s.Name() {
			return fmt.Errorf("service %q is already attached", s.Name())
		}
	}
	a.services = append(a.services, s)
	return nil
}

// Services returns the services attached to the app, in the order they
// were attached.
func (a *App) Services() []Service {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Service(nil), a.services...)
}

// runServices starts each attached service through run, which owns the
// goroutine and handles its error.
func (a *App) runServices(ctx context.Context, run func(func() error)) {
	a.mu.Lock()
	svcs := append([]Service(nil), a.services...)
	a.mu.Unlock()
	for _, s := range svcs {
		run(func() error {
			if err := s.Run(ctx); err != nil {
				return fmt.Errorf("service %s: %w", s.Name(), err)
			}
			return nil
		})
	}
}
