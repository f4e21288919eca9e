package cmd

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/leatdev/leat/app"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// Names of the global TLS flags (app.TLSConfig).
const (
	flagTLSCA         = "tls-ca"
	flagTLSCert       = "tls-cert"
	flagTLSKey        = "tls-key"
	flagTLSServerName = "tls-server-name"
)

// withTLSFlags returns the global flags with the TLS flags after --redis.
func withTLSFlags(flags []cli.Flag) []cli.Flag {
	tlsFlags := []cli.Flag{
		&cli.StringFlag{
			Name:    flagTLSCA,
			Usage:   "PEM `FILE` of the CA that signed the server's certificate, for rediss:// (default: the system's roots)",
			EnvVars: []string{"LEAT_TLS_CA"},
		},
		&cli.StringFlag{
			Name:    flagTLSCert,
			Usage:   "PEM `FILE` of the client certificate, for servers that require one (mutual TLS; with --tls-key)",
			EnvVars: []string{"LEAT_TLS_CERT"},
		},
		&cli.StringFlag{
			Name:    flagTLSKey,
			Usage:   "PEM `FILE` of the client certificate's private key (with --tls-cert)",
			EnvVars: []string{"LEAT_TLS_KEY"},
		},
		&cli.StringFlag{
			Name:    flagTLSServerName,
			Usage:   "`NAME` the server's certificate must hold (default: the host of --redis)",
			EnvVars: []string{"LEAT_TLS_SERVER_NAME"},
		},
	}
	out := make([]cli.Flag, 0, len(flags)+len(tlsFlags))
	for _, f := range flags {
		out = append(out, f)
		if f.Names()[0] == flagRedis {
			out = append(out, tlsFlags...)
		}
	}
	return out
}

// tlsConfig returns the TLS flags as an app.TLSConfig, after checking that
// their files can be used with redisURL: a usage error names the file.
func tlsConfig(c *cli.Context, redisURL string) (app.TLSConfig, error) {
	t := app.TLSConfig{
		CAFile:     c.String(flagTLSCA),
		CertFile:   c.String(flagTLSCert),
		KeyFile:    c.String(flagTLSKey),
		ServerName: c.String(flagTLSServerName),
	}
	if t.IsZero() {
		return t, nil
	}
	if !strings.HasPrefix(strings.ToLower(redisURL), "rediss://") {
		return t, usageErrorf("--%s, --%s, --%s and --%s configure TLS, which a rediss:// URL turns on; --redis is not one",
			flagTLSCA, flagTLSCert, flagTLSKey, flagTLSServerName)
	}
	if _, err := t.Load(""); err != nil {
		msg := strings.TrimPrefix(err.Error(), app.ErrTLSConfig.Error()+": ")
		msg = strings.NewReplacer("CA file", "--tls-ca", "client certificate", "--tls-cert",
			"client key", "--tls-key", "with key", "with --tls-key").Replace(msg)
		msg = strings.ReplaceAll(msg, "(set the certificate file too)", "(set --tls-cert too)")
		msg = strings.ReplaceAll(msg, "(set the key file too)", "(set --tls-key too)")
		return t, usageError{errors.New(msg)}
	}
	return t, nil
}

// errTLSExpected is a redis:// URL naming a server that speaks TLS.
var errTLSExpected = tlsExpectedError{}

type tlsExpectedError struct{}

func (tlsExpectedError) Error() string {
	return "the server closed the connection, and it answers a TLS handshake: " +
		"it looks like the server expects TLS (use rediss://, with --tls-ca for its CA)"
}

// droppedPlain reports whether err is what a plain-text client gets from a
// server that expects a TLS handshake: the connection closed or reset.
func droppedPlain(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// tlsAt reports whether addr answers a TLS handshake. It verifies nothing
// and sends no command: it only tells a TLS port from a plain one.
func tlsAt(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, tlsProbeTimeout)
	defer cancel()
	d := tls.Dialer{
		NetDialer: &net.Dialer{Timeout: tlsProbeTimeout},
		Config:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a probe: no data is sent
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		return true
	}
	var alert tls.AlertError
	return errors.As(err, &alert) || strings.Contains(err.Error(), "remote error: tls")
}

// plainURLAddr returns the host:port of a redis:// URL, "" for others.
func plainURLAddr(url string) string {
	if !strings.HasPrefix(strings.ToLower(url), "redis://") {
		return ""
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return ""
	}
	return opt.Addr
}

// A server that requires a client certificate and gets none, or one its CA
// did not sign, drops the connection in ways that vary with the TLS version
// and the moment: "certificate required", "connection reset by peer",
// "error decrypting message". So when a TLS connection fails for another
// reason than the server's certificate, the CLI completes a handshake of its
// own and reports whether the server asked for a client certificate.

// clientCertError is a TLS connection dropped by a server that asks for a
// client certificate.
type clientCertError struct{ err error }

func (e *clientCertError) Error() string {
	return "the server dropped the TLS connection (" + dialCause(e.err) + "), and it asks for a client certificate: " +
		"pass --tls-cert and --tls-key with a certificate signed by a CA the server trusts"
}
func (e *clientCertError) Unwrap() error { return e.err }

// clientCertHint returns err, or a clientCertError when err is a failed TLS
// connection to addr and the server there asks for a client certificate.
func clientCertHint(ctx context.Context, addr string, err error) error {
	var verr *tls.CertificateVerificationError
	var re redis.Error
	if err == nil || errors.As(err, &verr) || errors.As(err, &re) || ctx.Err() != nil {
		return err
	}
	if asksClientCert(ctx, addr) {
		return &clientCertError{err: err}
	}
	return err
}

// asksClientCert reports whether the TLS server at addr requests a client
// certificate in its handshake. It verifies nothing and sends no command.
func asksClientCert(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, tlsProbeTimeout)
	defer cancel()
	asked := false
	d := tls.Dialer{
		NetDialer: &net.Dialer{Timeout: tlsProbeTimeout},
		Config: &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // a probe: no data is sent
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				asked = true
				return &tls.Certificate{}, nil
			},
		},
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
	}
	return asked
}

// tlsHint explains a failed TLS connection: a certificate the CA does not
// vouch for, or a client certificate the server requires.
func tlsHint(err error) string {
	var verr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &verr):
		return "TLS certificate verification failed: " + strings.TrimPrefix(verr.Err.Error(), "x509: ") +
			" (pass the CA that signed the server's certificate with --tls-ca, or the name it holds with --tls-server-name)"
	case errors.As(err, new(*clientCertError)):
		return err.Error()
	}
	return ""
}
