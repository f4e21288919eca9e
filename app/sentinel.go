package app

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A Redis Sentinel URL is go-redis's failover URL form: it names one
// sentinel, optionally more with addr query parameters, and the master the
// sentinels monitor with master_name:
//
//	redis://[USER:PASSWORD@]SENTINEL:PORT[/DB]?master_name=NAME[&addr=SENTINEL2:PORT][&password=MASTER_PASSWORD]
//
// The user-info authenticates to the sentinels; the master's credentials,
// when it has its own, are the username and password query parameters.
// rediss:// connects to the sentinels and the master with TLS.

// sentinelParam is the query parameter that makes a URL a Sentinel URL.
const sentinelParam = "master_name"

// IsSentinelURL reports whether raw is a Redis Sentinel URL: one that names
// a master with master_name.
func IsSentinelURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Query().Has(sentinelParam)
}

// ParseSentinelURL parses a Redis Sentinel URL (see IsSentinelURL) as the
// App does. It refuses what leat cannot work with or what go-redis would
// take badly: a master name that is empty, a unix socket, and the options
// that send commands to replicas (replica_only, route_by_latency,
// route_randomly): leat writes on every path.
func ParseSentinelURL(raw string) (*redis.FailoverOptions, error) {
	u, err := parseTCPURL(raw, "Redis Sentinel")
	if err != nil {
		return nil, err
	}
	q := u.Query()
	if strings.TrimSpace(q.Get(sentinelParam)) == "" {
		return nil, errors.New("master_name is empty: name the master the sentinels monitor")
	}
	for _, p := range []string{"replica_only", "route_by_latency", "route_randomly"} {
		if vs := q[p]; len(vs) > 0 {
			if on, err := strconv.ParseBool(vs[len(vs)-1]); err == nil && on { // go-redis reads the last
				return nil, fmt.Errorf("%s sends commands to replicas, which refuse writes: leat needs the master", p)
			}
		}
	}
	return redis.ParseFailoverURL(raw)
}

// newFailoverClient makes the Sentinel client of an App from cfg.RedisURL,
// with cfg.TLS and the App's hooks. The App closes it.
func newFailoverClient(cfg Config) (*redis.Client, error) {
	opt, err := ParseSentinelURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("app config: redis sentinel URL: %w", err)
	}
	if err := cfg.TLS.ApplyFailover(opt); err != nil {
		return nil, fmt.Errorf("app config: %w", err)
	}
	client := redis.NewFailoverClient(opt)
	client.AddHook(deniedHook{prefix: cfg.KeyPrefix, single: true})
	return client, nil
}
