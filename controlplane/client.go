package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Errors of a Client.
var (
	// ErrUnauthorized: the control plane refused the token.
	ErrUnauthorized = errors.New("controlplane: the control plane refused the worker token")
	// ErrUnknownWorker: the control plane no longer knows the worker
	// (silent for too long): register again.
	ErrUnknownWorker = errors.New("controlplane: unknown worker: register again")
)

// requestTimeout bounds one request of a Client.
const requestTimeout = 30 * time.Second

// Client is a worker's side of the control plane.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// NewClient returns a client of the control plane at server (http:// or
// https://, without credentials, query or fragment) presenting token. It
// follows no redirect, so the token goes nowhere else.
func NewClient(server, token string) (*Client, error) {
	u, err := url.Parse(server)
	switch {
	case err != nil:
		return nil, fmt.Errorf("server URL %q: %w", server, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("server URL %q: want http:// or https://", server)
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("server URL %q: want http(s)://HOST[:PORT][/PATH], without credentials or query", server)
	case token == "":
		return nil, errors.New("no worker token")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{base: u, token: token, http: &http.Client{
		Timeout:       requestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Register registers the worker.
func (c *Client) Register(ctx context.Context, h Hello) (*Registration, error) {
	var reg Registration
	if err := c.post(ctx, "/v1/workers/register", h, &reg); err != nil {
		return nil, err
	}
	return &reg, nil
}

// Heartbeat reports the worker's state and returns its assignment.
func (c *Client) Heartbeat(ctx context.Context, id string, b Beat) (*Assignment, error) {
	var a Assignment
	if err := c.post(ctx, "/v1/workers/"+url.PathEscape(id)+"/heartbeat", b, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// post sends v as JSON to path and decodes the answer into out.
func (c *Client) post(ctx context.Context, path string, v, out any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	u := *c.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var e struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return json.Unmarshal(b, out)
	case resp.StatusCode == http.StatusUnauthorized:
		return ErrUnauthorized
	case resp.StatusCode == http.StatusNotFound && json.Unmarshal(b, &e) == nil && e.Code == "unknown_worker":
		return ErrUnknownWorker
	case json.Unmarshal(b, &e) == nil && e.Error != "":
		return fmt.Errorf("control plane: %s: %s (%s)", resp.Status, e.Error, e.Code)
	}
	return fmt.Errorf("control plane: %s", resp.Status)
}
