package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside the server's state directory.
const (
	KeyFileName  = "key.pem"
	CertFileName = "cert.pem"
)

// FingerprintPrefix starts every fingerprint kerf prints or pins.
const FingerprintPrefix = "sha256:"

// Fingerprint identifies a server by its public key: "sha256:" and the
// hex SHA-256 of the certificate's SubjectPublicKeyInfo. Pinning the key
// rather than the certificate lets a certificate be renewed on the same
// key without clients noticing.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return FingerprintPrefix + hex.EncodeToString(sum[:])
}

// Identity is a server's TLS certificate and its fingerprint.
type Identity struct {
	Cert        tls.Certificate
	Fingerprint string
}

// LoadIdentity reads a PEM certificate chain and key (--cert, --key).
func LoadIdentity(certFile, keyFile string) (*Identity, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return newIdentity(c)
}

func newIdentity(c tls.Certificate) (*Identity, error) {
	if len(c.Certificate) == 0 {
		return nil, errors.New("auth: empty certificate chain")
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	c.Leaf = leaf
	return &Identity{Cert: c, Fingerprint: Fingerprint(leaf)}, nil
}

// LoadOrCreateIdentity loads the key and self-signed certificate kept in
// the state directory dir, creating both (and dir, mode 0700) on first
// start. created reports that they were just made.
func LoadOrCreateIdentity(dir string) (id *Identity, created bool, err error) {
	certFile, keyFile := filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName)
	if _, err := os.Stat(keyFile); err == nil {
		id, err := LoadIdentity(certFile, keyFile)
		return id, false, err
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("auth: %w", err)
	}
	certPEM, keyPEM, err := SelfSigned("kerf server")
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("auth: %w", err)
	}
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return nil, false, err
	}
	if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
		return nil, false, err
	}
	id, err = LoadIdentity(certFile, keyFile)
	return id, err == nil, err
}

// SelfSigned makes an ECDSA P-256 key and a self-signed certificate
// valid for 100 years (clients pin the key, not a chain of trust).
func SelfSigned(name string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: %w", err)
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	hostname, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: strings.TrimSpace(name + " " + hostname)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(100, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// NewIdentity makes a throwaway self-signed identity in memory (demo,
// tests).
func NewIdentity() (*Identity, error) {
	certPEM, keyPEM, err := SelfSigned("kerf")
	if err != nil {
		return nil, err
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return newIdentity(c)
}

// ServerTLS is the server side TLS configuration: TLS 1.3 only.
func (id *Identity) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.Cert},
	}
}

// ClientTLS is a client configuration that accepts exactly the server
// whose key check approves: verify gets the fingerprint of the key the
// server presented. The certificate chain is not checked against any
// CA; the pin is the trust.
func ClientTLS(serverName string, verify func(fingerprint string) error) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		ServerName:         serverName,
		InsecureSkipVerify: true, // replaced by VerifyConnection's pin check
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("auth: server presented no certificate")
			}
			return verify(Fingerprint(cs.PeerCertificates[0]))
		},
	}
}

// PeerFingerprint is the fingerprint of the certificate the peer of a
// finished handshake presented, or "".
func PeerFingerprint(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return ""
	}
	return Fingerprint(cs.PeerCertificates[0])
}
