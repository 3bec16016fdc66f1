package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A single-session send or get whose connection is reset mid-file (a
// middlebox, a flapping path: `ss -K` here, a real socket killed under a
// running kerf) dials the server again and goes on from what the
// receiver kept: the command ends well, the copy is exact, and the bytes
// are counted once. With --reconnect 0 the loss ends the command, as
// before, and --resume is left to finish it.
func TestLostConnectionIsRedialled(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Fatal("this test needs ss (iproute2) to reset a connection: apt-get install iproute2")
	}
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	const size = 24 << 20
	writeFile(t, filepath.Join(local, "up.bin"), randomBytes(size, 71))
	writeFile(t, filepath.Join(root, "down.bin"), randomBytes(size, 72))
	_, cport, _ := net.SplitHostPort(srv.addr)
	_, dport, _ := net.SplitHostPort(srv.dataAddr)
	for _, c := range []struct {
		what     string
		port     string
		args     []string
		from, to string
		fail     bool
		server   bool  // the server's end is reset, not the client's
		partial  int64 // a partial of this many bytes is there first (--resume)
	}{
		{"send, data connection", dport, []string{"send", "--limit-rate", "8M", "up.bin", srv.addr}, filepath.Join(local, "up.bin"), filepath.Join(root, "up.bin"), false, false, 0},
		{"send, control connection", cport, []string{"send", "--limit-rate", "8M", "up.bin", target(srv.addr, "up2.bin")}, filepath.Join(local, "up.bin"), filepath.Join(root, "up2.bin"), false, false, 0},
		{"get, data connection", dport, []string{"get", "--limit-rate", "8M", target(srv.addr, "down.bin"), "down.bin"}, filepath.Join(root, "down.bin"), filepath.Join(local, "down.bin"), false, false, 0},
		{"get, control connection", cport, []string{"get", "--limit-rate", "8M", target(srv.addr, "down.bin"), "down2.bin"}, filepath.Join(root, "down.bin"), filepath.Join(local, "down2.bin"), false, false, 0},
		// The server's end: its data path fails first, and it says so
		// in an E before this side sees the connection go.
		{"get, server's end of the data connection", dport, []string{"get", "--limit-rate", "8M", target(srv.addr, "down.bin"), "down3.bin"}, filepath.Join(root, "down.bin"), filepath.Join(local, "down3.bin"), false, true, 0},
		{"send, server's end of the data connection", dport, []string{"send", "--limit-rate", "8M", "up.bin", target(srv.addr, "up4.bin")}, filepath.Join(local, "up.bin"), filepath.Join(root, "up4.bin"), false, true, 0},
		// Resumed, then cut: the bytes counted are those moved, the
		// first partial not among them, nor what went twice.
		{"send --resume, data connection", dport, []string{"send", "--resume", "--limit-rate", "8M", "up.bin", target(srv.addr, "up5.bin")}, filepath.Join(local, "up.bin"), filepath.Join(root, "up5.bin"), false, false, 5 << 20},
		{"get --resume, data connection", dport, []string{"get", "--resume", "--limit-rate", "8M", target(srv.addr, "down.bin"), "down5.bin"}, filepath.Join(root, "down.bin"), filepath.Join(local, "down5.bin"), false, false, 5 << 20},
		{"send, --reconnect 0", dport, []string{"send", "--reconnect", "0", "--limit-rate", "8M", "up.bin", target(srv.addr, "up3.bin")}, "", "", true, false, 0},
	} {
		t.Run(c.what, func(t *testing.T) {
			if c.partial > 0 {
				whole, err := os.ReadFile(c.from)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, partName(c.to), whole[:c.partial])
			}
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := kerfCmd(t, ctx, srv, local, []string{"--json"}, c.args[0], c.args[1:]...)
			// At the first progress (a second or so into the file),
			// reset the connection.
			stdout, stderr, killed, err := runResetting(t, cmd, func(line string) bool {
				return strings.Contains(line, `"progress"`)
			}, func() string {
				if c.server {
					return resetServerEnd(t, c.port)
				}
				return resetOneConnection(t, c.port)
			})
			if killed == "" {
				t.Fatalf("no connection was reset:\n%s", stdout.String())
			}
			if c.fail {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 4 {
					t.Fatalf("kerf %s: %v, want exit status 4 (the loss ends it)\nstderr:\n%s", c.what, err, stderr.String())
				}
				if strings.Contains(stderr.String(), "reconnecting") {
					t.Errorf("--reconnect 0 reconnected:\n%s", stderr.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("kerf %s with its connection reset (%s): %v\nstdout:\n%s\nstderr:\n%s", c.what, killed, err, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), "reconnecting") {
				t.Errorf("no word of the reconnection on stderr:\n%s", stderr.String())
			}
			evs := parseEvents(t, stdout.String())
			last := evs[len(evs)-1]
			if last.Event != "done" || last.Bytes != size-c.partial || last.Files == nil || *last.Files != 1 {
				t.Errorf("last event %+v, want done with 1 file, %d bytes", last, size-c.partial)
			}
			if n := len(eventsNamed(evs, "file_done")); n != 1 {
				t.Errorf("%d file_done events, want 1", n)
			}
			if n := len(eventsNamed(evs, "reconnecting")); n != 1 {
				t.Errorf("%d reconnecting events, want 1:\n%s", n, stdout.String())
			}
			if n := len(eventsNamed(evs, "file_error")); n != 0 {
				t.Errorf("%d file_error events, want none:\n%s", n, stdout.String())
			}
			sameFile(t, c.from, c.to)
		})
	}
}

// resetServerEnd resets (ss -K) the server's end of the established
// connections on its port, and returns which.
func resetServerEnd(t *testing.T, port string) string {
	t.Helper()
	out, err := exec.Command("ss", "-K", "-tnH", "state", "established", "src", "127.0.0.1", "sport", "=", port).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ":"+port) {
		t.Fatalf("ss -K sport %s: %v %q (the kernel needs CONFIG_INET_DIAG_DESTROY, and the test CAP_NET_ADMIN)", port, err, out)
	}
	return "127.0.0.1:" + port
}

// A GET of two names that cannot share one filespec goes as two GETs;
// a successor that finished the first takes the lost session's place for
// the second (review: it was added beside it, and the second GET ran
// over both with one store: a panic).
func TestGetSecondSpecGroupAfterReconnect(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	const size = 24 << 20
	odd := "a} {b"
	writeFile(t, filepath.Join(root, odd), randomBytes(size, 72))
	writeFile(t, filepath.Join(root, "c.bin"), randomBytes(1000, 73))
	_, dport, _ := net.SplitHostPort(srv.dataAddr)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, []string{"--json"}, "get", "--limit-rate", "8M", target(srv.addr, odd), target(srv.addr, "c.bin"), "out")
	stdout, stderr, killed, err := runResetting(t, cmd, func(line string) bool {
		return strings.Contains(line, `"progress"`)
	}, func() string { return resetOneConnection(t, dport) })
	if killed == "" {
		t.Fatalf("nothing reset:\n%s", stdout.String())
	}
	if err != nil {
		t.Fatalf("get: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	sameFile(t, filepath.Join(root, odd), filepath.Join(local, "out", odd))
	sameFile(t, filepath.Join(root, "c.bin"), filepath.Join(local, "out", "c.bin"))
}

// A GET over --sessions 16 (the server's limit from one address) whose
// every data connection fails gets a successor: the lost session is
// closed before it is dialled (review: it was kept open, and the
// successor, a 17th, was refused "too many sessions" every try).
func TestGetSixteenSessionsDataLost(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	for j := range 64 {
		writeFile(t, filepath.Join(root, "tree", fmt.Sprintf("f%02d", j)), randomBytes(256<<10, uint64(100+j)))
	}
	_, dport, _ := net.SplitHostPort(srv.dataAddr)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, []string{"--json"}, "get", "-r", "--sessions", "16", "--limit-rate", "4M", target(srv.addr, "tree"), "out")
	// Reset once 16 files have begun: each taking about a second at
	// this rate, that is a file in every session, whose data channel is
	// open then (a file begins only after it). A reset while a session
	// still pairs its data connections is another case (flaky test
	// hunt: one in four runs under load), control's
	// TestDataConnLostWhilePairing.
	started := map[string]bool{}
	stdout, stderr, killed, err := runResetting(t, cmd, func(line string) bool {
		var e struct{ Event, Name string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Event == "file_start" {
			started[e.Name] = true
		}
		return len(started) >= 16
	}, func() string { return resetServerEnd(t, dport) })
	if killed == "" {
		t.Fatalf("nothing reset:\n%s", stdout.String())
	}
	if err != nil {
		t.Fatalf("get: %v\nstderr:\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "classic Kermit server") {
		t.Errorf("a kerf server taken for a classic one after the reconnection (QA af):\n%s", stderr.String())
	}
	for j := range 64 {
		name := fmt.Sprintf("f%02d", j)
		sameFile(t, filepath.Join(root, "tree", name), filepath.Join(local, "out", "tree", name))
	}
}
