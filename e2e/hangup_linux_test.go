//go:build linux

package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// A server on a terminal stops on SIGHUP, the terminal having closed,
// as it stops on SIGTERM (review: it kept serving, and its next log
// line to the gone terminal killed it).
func TestServerOnATerminalStopsOnHangup(t *testing.T) {
	argv := serverArgs(t, t.TempDir(), serverOpts{})
	p := onPty(t, argv, append(os.Environ(), "HOME="+t.TempDir()))
	p.prompt(t, "serving ")
	p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.exit(t); code != 0 || !strings.Contains(p.out.String(), "kerf: stopped (hangup)") {
		t.Errorf("exit %d, want 0 saying it stopped:\n%s", code, p.out.String())
	}
}
