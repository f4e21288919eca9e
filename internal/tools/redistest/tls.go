package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLSFiles are PEM files of a test certificate authority and of a server
// and a client certificate it signed, in a temporary directory. The server
// certificate is valid for 127.0.0.1 and localhost.
type TLSFiles struct {
	CA         string // the CA's certificate
	ServerCert string
	ServerKey  string
	ClientCert string
	ClientKey  string
}

// GenerateTLS writes a new CA, server and client certificate (ECDSA P-256,
// valid for a day) to a temporary directory removed when tb ends.
func GenerateTLS(tb testing.TB) TLSFiles {
	tb.Helper()
	dir := tb.TempDir()
	f := TLSFiles{
		CA:         filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"),
		ServerKey:  filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"),
		ClientKey:  filepath.Join(dir, "client.key"),
	}
	if err := f.generate(); err != nil {
		tb.Fatalf("redistest: generate TLS certificates: %v", err)
	}
	return f
}

func (f TLSFiles) generate() error {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "leat test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(f.CA, "CERTIFICATE", caDER); err != nil {
		return err
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyFile, "PRIVATE KEY", keyDER)
	}
	if err := leaf(2, "localhost", x509.ExtKeyUsageServerAuth, f.ServerCert, f.ServerKey); err != nil {
		return err
	}
	return leaf(3, "leat test client", x509.ExtKeyUsageClientAuth, f.ClientCert, f.ClientKey)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// Config returns a client TLS configuration that trusts f's CA and, with
// clientCert, presents f's client certificate.
func (f TLSFiles) Config(clientCert bool) (*tls.Config, error) {
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", f.CA)
	}
	tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if clientCert {
		cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// TLSServer is a redis-server that accepts TLS connections only.
type TLSServer struct {
	*Server // URL is rediss://127.0.0.1:PORT; Client connects with TLS
	Files   TLSFiles
}

// StartTLS starts a private redis-server for tb that listens with TLS only
// (--port 0, --tls-port), with certificates from GenerateTLS, and stops it
// when tb ends. With authClients, the server requires a client certificate
// signed by the CA (mutual TLS: --tls-auth-clients yes); otherwise it asks
// for none.
func StartTLS(tb testing.TB, authClients bool) *TLSServer {
	tb.Helper()
	files := GenerateTLS(tb)
	tc, err := files.Config(true)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	auth := "no"
	if authClients {
		auth = "yes"
	}
	s, err := startServerTLS(tc,
		"--tls-cert-file", files.ServerCert, "--tls-key-file", files.ServerKey,
		"--tls-ca-cert-file", files.CA, "--tls-auth-clients", auth)
	if err != nil {
		unavailable(tb, err)
	}
	tb.Cleanup(s.Stop)
	return &TLSServer{Server: s, Files: files}
}
