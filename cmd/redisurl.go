package cmd

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/leatdev/leat/app"
	"github.com/redis/go-redis/v9"
)

// Redis URLs carry passwords, so no message shows the user-info of one, in
// any form: well-formed (redis://user:pw@host), without a scheme
// (user:pw@host), without the slashes (redis:user:pw@host), or with a
// password whose '#', '/' or '?' cut the URL elsewhere than the user meant.
// checkRedisURL refuses what go-redis would misread, such as a URL without a
// host (which go-redis would take for 127.0.0.1:6379), with messages built
// from the URL's parts that are not secret.

// schemeToken matches what may be a URL scheme.
var schemeToken = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// hint is the form of a Redis URL, for messages.
const urlForm = "redis://[USER:PASSWORD@]HOST:PORT[/DB], rediss:// for TLS, or unix:///PATH " +
	"(a Redis Cluster: redis://[USER:PASSWORD@]HOST:PORT?addr=HOST2:PORT2, or any node's URL with --cluster; " +
	"Redis Sentinel: redis://[USER:PASSWORD@]SENTINEL:PORT?master_name=NAME&addr=SENTINEL2:PORT)"

// checkRedisURL returns a usage error when raw is not a Redis URL leat can
// use. Its messages show no part of the URL's user-info.
func checkRedisURL(raw string) error { return checkURL(raw, false) }

// checkURL is checkRedisURL for a cluster's seed node when cluster is set
// or raw names more nodes (?addr=HOST:PORT): then raw must be a URL that
// app.ParseClusterURL takes. A Sentinel URL (?master_name=NAME) must be one
// that app.ParseSentinelURL takes.
func checkURL(raw string, cluster bool) error {
	fail := func(format string, args ...any) error {
		return usageErrorf("invalid --redis URL: "+format, args...)
	}
	if strings.TrimSpace(raw) == "" {
		return fail("it is empty; want %s", urlForm)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		if s, _, found := strings.Cut(raw, ":"); found && isRedisScheme(s) {
			return fail("write %s:// with two slashes, as in %s://HOST:PORT", strings.ToLower(s), strings.ToLower(s))
		}
		return fail("no scheme; write redis://%s (or rediss:// for TLS)", redactAuthority(raw))
	}
	if !schemeToken.MatchString(scheme) {
		return fail("no scheme; want %s", urlForm)
	}
	if !isRedisScheme(scheme) {
		return fail("scheme %q is not supported; want %s", scheme, urlForm)
	}
	at := strings.LastIndex(rest, "@")
	if at >= 0 {
		userinfo := rest[:at]
		if strings.ContainsAny(userinfo, "/?#") {
			return fail("the user name or password holds '/', '?' or '#', which end the host part of a URL; " +
				"percent-encode them in the password: %%2F for /, %%3F for ?, %%23 for #")
		}
		if _, err := url.Parse("redis://" + userinfo + "@host"); err != nil {
			return fail("the user name or password holds characters a URL does not allow there; " +
				"percent-encode them: %%25 for %%, %%40 for @, %%20 for a space, %%3A for : in a user name")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if strings.Contains(err.Error(), "invalid port") {
			// The "port" may be a password given without a host.
			return fail("the port is not a number; want %s", urlForm)
		}
		return fail("it does not parse as a URL; want %s", urlForm)
	}
	sentinel := app.IsSentinelURL(raw)
	if sentinel && cluster {
		return fail("a Sentinel URL (master_name) names a master and its sentinels, not a Redis Cluster: drop --cluster")
	}
	cluster = cluster || app.IsClusterURL(raw)
	switch strings.ToLower(scheme) {
	case "unix":
		if sentinel {
			return fail("sentinels are reached over TCP: write redis://SENTINEL:PORT?master_name=NAME (or rediss:// for TLS)")
		}
		if cluster {
			return fail("a Redis Cluster is reached over TCP: write redis://HOST:PORT (or rediss:// for TLS) " +
				"with any node of the cluster")
		}
		if u.Path == "" {
			return fail("no socket path; write unix:///PATH/TO/redis.sock")
		}
	default:
		if u.Hostname() == "" {
			return fail("no host; write %s://HOST:PORT", strings.ToLower(scheme))
		}
	}
	if sentinel {
		if _, err := app.ParseSentinelURL(raw); err != nil {
			return fail("%s", scrub(strings.TrimPrefix(err.Error(), "redis: "), raw))
		}
		return nil
	}
	if cluster {
		if _, err := app.ParseClusterURL(raw); err != nil {
			return fail("%s", scrub(strings.TrimPrefix(err.Error(), "redis: "), raw))
		}
		return nil
	}
	if _, err := redis.ParseURL(raw); err != nil {
		return fail("%s", scrub(strings.TrimPrefix(err.Error(), "redis: "), raw))
	}
	return nil
}

// sentinelMaster returns the master name of a Sentinel URL ("" for other
// URLs). It is no secret: messages may show it.
func sentinelMaster(raw string) string {
	if !app.IsSentinelURL(raw) {
		return ""
	}
	u, _ := url.Parse(raw)
	return u.Query().Get("master_name")
}

func isRedisScheme(s string) bool {
	switch strings.ToLower(s) {
	case "redis", "rediss", "unix":
		return true
	}
	return false
}

// redactAuthority returns s, a URL without its scheme, with its user-info
// (up to the last '@') replaced by USER:PASSWORD and its query dropped.
func redactAuthority(s string) string {
	if at := strings.LastIndex(s, "@"); at >= 0 {
		s = "USER:PASSWORD@" + s[at+1:]
	}
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	return s
}

// redactURL returns raw without user-info and query (which may carry
// secrets), for messages: "redis://:secret@host:6379/0" → "redis://host:6379/0".
// It also works on URLs that do not parse.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		rest = raw
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if !ok || !schemeToken.MatchString(scheme) {
		return rest
	}
	return scheme + "://" + rest
}

// scrub removes from msg, a library's message about raw, anything of raw's
// user-info: the whole of it, the user name and the password, raw and
// decoded. Pieces shorter than 3 bytes are left, lest a message be mangled.
func scrub(msg, raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		rest = raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return msg
	}
	userinfo := rest[:at]
	secrets := []string{userinfo}
	user, pass, _ := strings.Cut(userinfo, ":")
	secrets = append(secrets, user, pass)
	for _, s := range []string{user, pass} {
		if d, err := url.PathUnescape(s); err == nil {
			secrets = append(secrets, d)
		}
	}
	for _, s := range secrets {
		if len(s) >= 3 {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	return msg
}
