package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// TLSConfig configures the TLS of the connections an App makes from
// Config.RedisURL. A rediss:// URL turns TLS on; these files configure it.
// The server's certificate is always verified: against CAFile when set,
// else against the system's roots.
type TLSConfig struct {
	// CAFile is a PEM file of the certificate authorities that sign the
	// server's certificate. Default: the system's roots.
	// Flag --tls-ca, env LEAT_TLS_CA.
	CAFile string

	// CertFile and KeyFile are the PEM files of the client certificate and
	// its private key, for servers that require one (mutual TLS,
	// tls-auth-clients yes). Set both or neither. Default none.
	// Flags --tls-cert and --tls-key, env LEAT_TLS_CERT and LEAT_TLS_KEY.
	CertFile string
	KeyFile  string

	// ServerName is the name the server's certificate must hold. Default:
	// the host of RedisURL. Flag --tls-server-name, env LEAT_TLS_SERVER_NAME.
	ServerName string
}

// ErrTLSConfig is the error of a TLSConfig that cannot be used: a file that
// cannot be read or holds no certificate, a certificate without its key, or
// TLS settings without a rediss:// URL.
var ErrTLSConfig = errors.New("TLS configuration")

// IsZero reports whether t sets nothing.
func (t TLSConfig) IsZero() bool { return t == TLSConfig{} }

// Load reads t's files and returns the client TLS configuration for
// serverName (the host of the URL; t.ServerName wins over it). Its errors
// wrap ErrTLSConfig and name the file at fault.
func (t TLSConfig) Load(serverName string) (*tls.Config, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrTLSConfig}, args...)...)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if t.ServerName != "" {
		tc.ServerName = t.ServerName
	}
	if t.CAFile != "" {
		data, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fail("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fail("CA file %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
	case t.CertFile == "":
		return nil, fail("client key %s given without its certificate (set the certificate file too)", t.KeyFile)
	case t.KeyFile == "":
		return nil, fail("client certificate %s given without its key (set the key file too)", t.CertFile)
	default:
		for _, f := range []string{t.CertFile, t.KeyFile} {
			if _, err := os.Stat(f); err != nil {
				return nil, fail("client certificate: %w", err)
			}
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "tls: ")
			return nil, fail("client certificate %s with key %s: %s", t.CertFile, t.KeyFile, msg)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Apply sets the TLS configuration of opt, parsed from a rediss:// URL by
// redis.ParseURL; it returns an error wrapping ErrTLSConfig when t is set
// and opt has no TLS (a redis:// URL). The App calls it on the client it
// makes from RedisURL; call it when building a client of your own.
func (t TLSConfig) Apply(opt *redis.Options) error {
	if t.IsZero() {
		return nil
	}
	if opt.TLSConfig == nil {
		return fmt.Errorf("%w: TLS files or server name are set, but the Redis URL does not start with rediss://: use rediss:// to connect with TLS", ErrTLSConfig)
	}
	tc, err := t.Load(opt.TLSConfig.ServerName)
	if err != nil {
		return err
	}
	// ?skip_verify=true in the URL stays the one way to turn verification
	// off.
	tc.InsecureSkipVerify = opt.TLSConfig.InsecureSkipVerify
	opt.TLSConfig = tc
	return nil
}

// ApplyCluster is Apply for the options of a cluster client, parsed from a
// rediss:// URL by ParseClusterURL (or redis.ParseClusterURL): every node
// connection uses the same TLS settings.
func (t TLSConfig) ApplyCluster(opt *redis.ClusterOptions) error { return t.applyTo(&opt.TLSConfig) }

// ApplyFailover is Apply for the options of a Sentinel client, parsed from
// a rediss:// URL by ParseSentinelURL (or redis.ParseFailoverURL): the
// sentinels and the master are reached with the same TLS settings.
func (t TLSConfig) ApplyFailover(opt *redis.FailoverOptions) error { return t.applyTo(&opt.TLSConfig) }

// applyTo is Apply for the TLS configuration *tc of other kinds of options.
func (t TLSConfig) applyTo(tc **tls.Config) error {
	single := &redis.Options{TLSConfig: *tc}
	if err := t.Apply(single); err != nil {
		return err
	}
	*tc = single.TLSConfig
	return nil
}
