package auth

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// KnownHostsFileName is the client's pin file inside its config directory.
const KnownHostsFileName = "known_hosts"

// Errors of the known-hosts check.
var (
	ErrHostUnknown    = errors.New("auth: unknown server")
	ErrHostKeyChanged = errors.New("auth: SERVER KEY CHANGED")
)

// KnownHosts pins servers' key fingerprints on first use, one
// "host:port sha256:HEX" line each, like ssh's known_hosts.
type KnownHosts struct {
	Path string
	// AcceptNew pins a server seen for the first time without asking.
	AcceptNew bool
	// AcceptChanged replaces the pin of a server whose key has changed.
	AcceptChanged bool
	// Ask, if set, is asked whether to trust a server seen for the first
	// time (an interactive prompt); without it and without AcceptNew an
	// unknown server is refused.
	Ask func(addr, fingerprint string) bool

	mu sync.Mutex
}

// Check approves fingerprint for the server at addr (host:port), pinning
// it when policy allows. The error explains what to do.
func (k *KnownHosts) Check(addr, fingerprint string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	pins, err := k.read()
	if err != nil {
		return err
	}
	old, known := pins[addr]
	switch {
	case known && old == fingerprint:
		return nil
	case known && !k.AcceptChanged:
		return fmt.Errorf("%w: %s presented key %s, but %s pins %s. "+
			"Someone may be intercepting the connection, or the server's key was replaced. "+
			"If you have confirmed the new fingerprint with the server's operator, rerun with --accept-changed-host-key",
			ErrHostKeyChanged, addr, fingerprint, k.Path, old)
	case !known && !k.AcceptNew && (k.Ask == nil || !k.Ask(addr, fingerprint)):
		return fmt.Errorf("%w: %s presents key %s. Compare it with the fingerprint `kerf serve` printed, "+
			"then rerun with --accept-new-host-key to pin it in %s", ErrHostUnknown, addr, fingerprint, k.Path)
	}
	pins[addr] = fingerprint
	return k.write(pins, addr)
}

// Lookup returns the fingerprint pinned for addr, if any.
func (k *KnownHosts) Lookup(addr string) (string, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	pins, err := k.read()
	fp, ok := pins[addr]
	return fp, ok, err
}

func (k *KnownHosts) read() (map[string]string, error) {
	pins := map[string]string{}
	b, err := os.ReadFile(k.Path)
	if errors.Is(err, os.ErrNotExist) {
		return pins, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: known hosts: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[1], FingerprintPrefix) {
			return nil, fmt.Errorf("auth: %s:%d: want \"host:port %s...\"", k.Path, n, FingerprintPrefix)
		}
		pins[f[0]] = f[1]
	}
	return pins, nil
}

// write rewrites the file, keeping comments and order, with addr's line
// replaced or appended.
func (k *KnownHosts) write(pins map[string]string, addr string) error {
	old, _ := os.ReadFile(k.Path)
	var out bytes.Buffer
	done := false
	sc := bufio.NewScanner(bytes.NewReader(old))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 2 && f[0] == addr {
			if done {
				continue
			}
			line, done = addr+" "+pins[addr], true
		}
		out.WriteString(line + "\n")
	}
	if !done {
		out.WriteString(addr + " " + pins[addr] + "\n")
	}
	return writeFileAtomic(k.Path, out.Bytes(), 0o600)
}
