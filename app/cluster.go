package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// ErrClusterNode is returned by Ping (and so by Run) when the App made a
// single-server client from Config.RedisURL and the server there is a node
// of a Redis Cluster: each node serves only its own slots, so most keys
// would get MOVED replies, after part of a batch was written. Set
// Config.Cluster (CLI: --cluster or LEAT_REDIS_CLUSTER=1), or name more
// nodes in the URL with ?addr=HOST:PORT.
var ErrClusterNode = topology.ErrClusterNode

// IsClusterURL reports whether raw is in go-redis's cluster URL form, which
// names more seed nodes of a Redis Cluster with addr query parameters:
// redis://[USER:PASSWORD@]HOST:PORT?addr=HOST2:PORT2&addr=HOST3:PORT3. A
// Sentinel URL (IsSentinelURL), whose addr parameters name sentinels, is
// not one.
func IsClusterURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Query().Has("addr") && !u.Query().Has(sentinelParam)
}

// clusterMode reports whether cfg asks for a cluster client.
func (c Config) clusterMode() bool { return c.Cluster || IsClusterURL(c.RedisURL) }

// ParseClusterURL parses a Redis Cluster URL (redis:// or rediss://, one
// seed node, optionally more as ?addr=HOST:PORT, go-redis's query options)
// as the App does for Config.Cluster. It refuses what a cluster cannot do
// or what go-redis would silently ignore: a unix socket, a database number
// other than 0.
func ParseClusterURL(raw string) (*redis.ClusterOptions, error) {
	u, err := parseTCPURL(raw, "Redis Cluster")
	if err != nil {
		return nil, err
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return nil, fmt.Errorf("a Redis Cluster has database 0 only; the URL names /%s", db)
	}
	u.Path = ""
	return redis.ParseClusterURL(u.String())
}

// parseTCPURL parses raw, the URL of a kind of Redis deployment reached
// over TCP only: redis:// or rediss://.
func parseTCPURL(raw, kind string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(u.Scheme) {
	case "redis", "rediss":
		return u, nil
	}
	return nil, fmt.Errorf("a %s URL starts with redis:// or rediss://, not %s://", kind, u.Scheme)
}

// newClusterClient makes the cluster client of an App from cfg.RedisURL,
// with cfg.TLS and the App's hooks. The App closes it. Every cluster client
// the App makes comes from here, so that hooks on the slot map attach in
// one place.
func newClusterClient(cfg Config) (*redis.ClusterClient, error) {
	opt, err := ParseClusterURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("app config: redis cluster URL: %w", err)
	}
	if err := cfg.TLS.ApplyCluster(opt); err != nil {
		return nil, fmt.Errorf("app config: %w", err)
	}
	client := redis.NewClusterClient(opt)
	client.AddHook(deniedHook{prefix: cfg.KeyPrefix})
	return client, nil
}

// newOwnClient makes the client of an App whose Config names no Client: a
// Sentinel client for a Sentinel URL, a cluster client when cfg asks for
// one, else a single-server client.
func (c Config) newOwnClient() (redis.UniversalClient, error) {
	if IsSentinelURL(c.RedisURL) {
		return newFailoverClient(c)
	}
	if c.clusterMode() {
		return newClusterClient(c)
	}
	return newClient(c)
}

// newClient makes the single-server client of an App from cfg.RedisURL.
func newClient(cfg Config) (*redis.Client, error) {
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("app config: redis URL: %w", err)
	}
	if err := cfg.TLS.Apply(opt); err != nil {
		return nil, fmt.Errorf("app config: %w", err)
	}
	client := redis.NewClient(opt)
	client.AddHook(deniedHook{prefix: cfg.KeyPrefix, single: true})
	return client, nil
}

// checkNotClusterNode returns ErrClusterNode when the single server c talks
// to is a Redis Cluster node (rdb.IsClusterNode); a user allowed neither
// CLUSTER INFO nor INFO is not checked (the first MOVED reply then names
// the fix, see deniedHook).
func checkNotClusterNode(ctx context.Context, c *redis.Client) error {
	if rdb.IsClusterNode(ctx, c) {
		return ErrClusterNode
	}
	return nil
}

// isClusterReply reports whether err is a reply only a Redis Cluster node
// gives: a redirection (MOVED or ASK) that a single-server client cannot
// follow, or CROSSSLOT.
func isClusterReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ") || strings.HasPrefix(msg, "CROSSSLOT ")
}
