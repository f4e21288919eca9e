package cmd

import (
	"context"
	"net/http"
	"sync"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/controlplane"
	"github.com/urfave/cli/v2"
)

// flagPools names the pools file that makes "leat serve" a control plane.
const flagPools = "pools"

func poolsFlag() cli.Flag {
	return &cli.StringFlag{Name: flagPools, EnvVars: []string{"LEAT_SERVE_POOLS"},
		Usage: "act as the control plane of the worker pools and deployments of the pools `FILE` (see docs/control-plane.md)"}
}

// withPlane returns h with the control plane's worker routes in front of
// it when --pools is given, and a function that stops the revision polling
// and waits for it. The pools' tokens are checked against the API's.
func withPlane(c *cli.Context, a *app.App, h http.Handler, apiToken string) (http.Handler, func(), error) {
	path := c.String(flagPools)
	if path == "" {
		return h, func() {}, nil
	}
	f, err := controlplane.Load(path, nil)
	if err != nil {
		return nil, nil, usageError{err}
	}
	cfg := a.Config()
	p, err := controlplane.New(controlplane.Config{File: f, Client: a.Client(), App: a.Name(), Prefix: cfg.KeyPrefix,
		RedisURL: cfg.RedisURL, APIToken: apiToken, Logger: a.Logger()})
	if err != nil {
		return nil, nil, usageError{err}
	}
	if err := p.Prepare(c.Context); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(c.Context)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
	mux := http.NewServeMux()
	workers := p.Handler()
	mux.Handle(controlplane.RouteRegister, workers)
	mux.Handle(controlplane.RouteHeartbeat, workers)
	mux.Handle("/", h)
	return mux, func() { cancel(); wg.Wait() }, nil
}
