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
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// File names inside the server's state directory, and inside a client's
// identity directory.
const (
	KeyFileName  = "key.pem"
	CertFileName = "cert.pem"
)

// FingerprintPrefix starts every fingerprint kerf prints or pins.
const FingerprintPrefix = "sha256:"

// Fingerprint identifies a server or a client by its public key: "sha256:" and the
// hex SHA-256 of the certificate's SubjectPublicKeyInfo. Pinning the key
// rather than the certificate lets a certificate be renewed on the same
// key without clients noticing.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return FingerprintPrefix + hex.EncodeToString(sum[:])
}

// Identity is a TLS certificate (a server's, or a client's for
// public-key login) and its key's fingerprint.
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
// start. created reports that they were just made. Processes racing to
// create them all end with the same one, made by exactly one of them.
func LoadOrCreateIdentity(dir string) (id *Identity, created bool, err error) {
	return loadOrCreate(dir, "kerf server", x509.ExtKeyUsageServerAuth)
}

// LoadOrCreateClientIdentity loads a client's key and self-signed
// certificate from its identity directory dir (key.pem, cert.pem),
// creating both (and dir, mode 0700; the key 0600) on first use. The
// client presents the certificate to a server in the TLS handshake;
// the server knows the key by its fingerprint (public-key login).
func LoadOrCreateClientIdentity(dir string) (id *Identity, created bool, err error) {
	id, created, err = loadOrCreate(dir, "kerf client", x509.ExtKeyUsageClientAuth)
	if err == nil && !created {
		err = checkKeyProtected(filepath.Join(dir, KeyFileName))
	}
	if err != nil {
		return nil, false, err
	}
	return id, created, nil
}

// ErrKeyUnprotected is returned for a client key file that others may
// read: like ssh, kerf does not use it.
var ErrKeyUnprotected = errors.New("auth: private key file is readable by others")

// LoadClientIdentity loads the client key kept in dir without creating
// one: an error wrapping os.ErrNotExist means there is none. A key file
// that group or others may read is refused (ErrKeyUnprotected).
func LoadClientIdentity(dir string) (*Identity, error) {
	keyFile := filepath.Join(dir, KeyFileName)
	if err := checkKeyProtected(keyFile); err != nil {
		return nil, err
	}
	return loadDir(dir)
}

// checkKeyProtected refuses a private key file that group or others may
// read or write (on systems with Unix permissions).
func checkKeyProtected(keyFile string) error {
	fi, err := os.Stat(keyFile)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %#o; run chmod 600 %s", ErrKeyUnprotected, keyFile, fi.Mode().Perm(), keyFile)
	}
	return nil
}

func loadOrCreate(dir, name string, usage x509.ExtKeyUsage) (id *Identity, created bool, err error) {
	keyFile := filepath.Join(dir, KeyFileName)
	if _, err := os.Lstat(keyFile); err == nil {
		id, err := loadDir(dir)
		return id, false, err
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("auth: %w", err)
	}
	certPEM, keyPEM, err := selfSigned(name, usage)
	if err != nil {
		return nil, false, err
	}
	// Two processes may get here at once (two servers started on a new
	// state directory). key.pem holds the key and its certificate
	// together and appears in one step that fails if it already exists,
	// so the pair is never seen half made or mismatched, and whoever
	// loses the race uses the winner's.
	// (publishFile makes dir, 0700, if need be.)
	err = publishFile(keyFile, append(keyPEM, certPEM...), 0o600)
	if errors.Is(err, fs.ErrExist) {
		id, err := loadDir(dir)
		return id, false, err
	}
	if err != nil {
		return nil, false, err
	}
	// cert.pem is a copy for --cert, other programs and people; kerf
	// reads the certificate from key.pem. Only the winner writes it.
	if err := writeFileAtomic(filepath.Join(dir, CertFileName), certPEM, 0o644); err != nil {
		return nil, false, err
	}
	id, err = loadDir(dir)
	return id, err == nil, err
}

// loadDir loads the key and certificate kept in dir: both from key.pem,
// or, for a key.pem without a certificate (as kerf wrote them before),
// the certificate from cert.pem.
func loadDir(dir string) (*Identity, error) {
	keyPEM, err := os.ReadFile(filepath.Join(dir, KeyFileName))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	certPEM := keyPEM
	if !hasCertificate(keyPEM) {
		if certPEM, err = os.ReadFile(filepath.Join(dir, CertFileName)); err != nil {
			// A key.pem of kerf's own holds its certificate too (older
			// ones kept it in cert.pem): without either it is damaged,
			// and "open cert.pem" alone sent the user in circles (QA).
			return nil, fmt.Errorf("auth: %s holds no certificate, and %w (damaged? move it away, and a new key is made)", filepath.Join(dir, KeyFileName), err)
		}
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// Named: "failed to find any PEM data" said not which file (QA).
		return nil, fmt.Errorf("auth: %s: %w (damaged? move it away, and a new key is made)", filepath.Join(dir, KeyFileName), err)
	}
	return newIdentity(c)
}

func hasCertificate(pemData []byte) bool {
	for {
		var b *pem.Block
		if b, pemData = pem.Decode(pemData); b == nil {
			return false
		}
		if b.Type == "CERTIFICATE" {
			return true
		}
	}
}

// SelfSigned makes an ECDSA P-256 key and a self-signed server
// certificate valid for 100 years (clients pin the key, not a chain of
// trust).
func SelfSigned(name string) (certPEM, keyPEM []byte, err error) {
	return selfSigned(name, x509.ExtKeyUsageServerAuth)
}

func selfSigned(name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
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
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
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
	return newMemIdentity("kerf", x509.ExtKeyUsageServerAuth)
}

// NewClientIdentity makes a throwaway client identity in memory (tests).
func NewClientIdentity() (*Identity, error) {
	return newMemIdentity("kerf client", x509.ExtKeyUsageClientAuth)
}

func newMemIdentity(name string, usage x509.ExtKeyUsage) (*Identity, error) {
	certPEM, keyPEM, err := selfSigned(name, usage)
	if err != nil {
		return nil, err
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return newIdentity(c)
}

// CheckFingerprint checks the syntax of a key fingerprint given by a
// person ("sha256:" and 64 hex digits) and returns it in the form kerf
// prints (lower case).
func CheckFingerprint(fp string) (string, error) {
	fp = strings.ToLower(strings.TrimSpace(fp))
	hexPart, ok := strings.CutPrefix(fp, FingerprintPrefix)
	if b, err := hex.DecodeString(hexPart); !ok || err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("%w: %q (want %s and 64 hex digits, as `kerf key` prints)", ErrBadFingerprint, fp, FingerprintPrefix)
	}
	return fp, nil
}

// ErrBadFingerprint is returned for a malformed key fingerprint.
var ErrBadFingerprint = errors.New("auth: bad key fingerprint")

// ServerTLS is the server side TLS configuration: TLS 1.3 only, and no
// session resumption: a resumed session carries the client certificate
// of the one it resumes, so a ticket taken from a client would log in
// as its key without the key (QA ah); kerf clients never resume.
func (id *Identity) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{id.Cert},
		SessionTicketsDisabled: true,
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
