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
	// Unsaved, if set, is told a pin that could not be written (the
	// directory not writable: a read-only or missing home), and the
	// server is trusted for this connection all the same, as ssh does;
	// without it that is an error.
	Unsaved func(err error)
	// Home, if set, is a directory the pin is written under that must
	// be there already: a home directory that does not exist (a service
	// user's /nonexistent) is not made to hold it, as ssh does not make
	// one for ~/.ssh (QA ak). The pin is then unsaved.
	Home string

	mu sync.Mutex
}

// Check approves fingerprint for the server at addr (host:port), pinning
// it when policy allows. The error explains what to do.
func (k *KnownHosts) Check(addr, fingerprint string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, pins, err := k.read()
	if err != nil {
		return err
	}
	pin, err := k.decide(pins, addr, fingerprint, func() bool { return k.Ask != nil && k.Ask(addr, fingerprint) })
	if !pin || err != nil {
		return err
	}
	// Other clients may pin at the same time: the file is read again and
	// replaced under a lock, so that no one's pin is lost. Ask is not
	// called with the lock held (a prompt would hold up other clients),
	// so the policy is applied again to what the file now holds.
	if k.Home != "" {
		if fi, err := os.Stat(k.Home); err != nil || !fi.IsDir() {
			if err == nil {
				err = fmt.Errorf("%s is not a directory", k.Home)
			}
			return k.unsaved(fmt.Errorf("auth: the home directory is not there: %w", err))
		}
	}
	unlock, err := lockFile(k.Path)
	if err != nil {
		return k.unsaved(err)
	}
	defer unlock()
	old, pins, err := k.read()
	if err != nil {
		return err
	}
	if pin, err = k.decide(pins, addr, fingerprint, func() bool { return true }); !pin || err != nil {
		return err
	}
	return k.unsaved(writeFileAtomic(k.Path, withPin(old, addr, fingerprint), 0o600))
}

// unsaved is err, or nil once told to Unsaved.
func (k *KnownHosts) unsaved(err error) error {
	if err == nil || k.Unsaved == nil {
		return err
	}
	k.Unsaved(err)
	return nil
}

// decide applies the policy to fingerprint for addr given pins: pin
// reports that it is to be pinned, err that it is refused. approveNew
// is asked about a server not pinned yet when AcceptNew is not set.
func (k *KnownHosts) decide(pins map[string]string, addr, fingerprint string, approveNew func() bool) (pin bool, err error) {
	old, known := pins[addr]
	switch {
	case known && old == fingerprint:
		return false, nil
	case known && !k.AcceptChanged:
		return false, fmt.Errorf("%w: %s presented key %s, but %s pins %s. "+
			"Someone may be intercepting the connection, or the server's key was replaced. "+
			"If you have confirmed the new fingerprint with the server's operator, rerun with --accept-changed-host-key",
			ErrHostKeyChanged, addr, fingerprint, k.Path, old)
	case !known && !k.AcceptNew && !approveNew():
		return false, fmt.Errorf("%w: %s presents key %s. Compare it with the fingerprint `kerf serve` printed, "+
			"then rerun with --accept-new-host-key to pin it in %s", ErrHostUnknown, addr, fingerprint, k.Path)
	}
	return true, nil
}

// Lookup returns the fingerprint pinned for addr, if any.
func (k *KnownHosts) Lookup(addr string) (string, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, pins, err := k.read()
	fp, ok := pins[addr]
	return fp, ok, err
}

// read returns the file's contents and the pins in it; a missing file
// has none.
func (k *KnownHosts) read() ([]byte, map[string]string, error) {
	pins := map[string]string{}
	b, err := os.ReadFile(k.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, pins, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("auth: known hosts: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[1], FingerprintPrefix) {
			return nil, nil, fmt.Errorf("auth: %s:%d: want \"host:port %s...\"", k.Path, n, FingerprintPrefix)
		}
		pins[f[0]] = f[1]
	}
	return b, pins, nil
}

// withPin is the file old with addr's line replaced or appended,
// keeping comments and order.
func withPin(old []byte, addr, fingerprint string) []byte {
	var out bytes.Buffer
	done := false
	sc := bufio.NewScanner(bytes.NewReader(old))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 2 && f[0] == addr {
			if done {
				continue
			}
			line, done = addr+" "+fingerprint, true
		}
		out.WriteString(line + "\n")
	}
	if !done {
		out.WriteString(addr + " " + fingerprint + "\n")
	}
	return out.Bytes()
}
