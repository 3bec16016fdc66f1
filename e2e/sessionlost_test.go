package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A session lost in the middle of a send or get over several sessions
// (its control connection reset, as a middlebox or a flapping path
// does to one flow) costs nothing: a new login of its own (--reconnect)
// takes over its files under way (send) or the rest of its share (get),
// resuming, or with --reconnect 0 another session does, and the
// command ends well with every file there once and every byte counted.
// The connection is reset by the kernel (`ss -K`, SOCK_DESTROY): a real
// socket killed under a running kerf.
func TestSessionLostIsTakenOver(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Fatal("this test needs ss (iproute2) to reset a connection: apt-get install iproute2")
	}
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	const n, size = 30, 512 << 10
	var names []string
	for i := range n {
		name := fmt.Sprintf("tree/f%02d", i)
		writeFile(t, filepath.Join(local, name), randomBytes(size, uint64(100+i)))
		names = append(names, name)
	}
	_, cport, _ := net.SplitHostPort(srv.addr)
	_, dport, _ := net.SplitHostPort(srv.dataAddr)
	for _, c := range []struct {
		what string
		port string // whose connection is reset
		dir  string
		args []string
		from string
		to   string
		said string // on stderr: word of the successor or the take-over
	}{
		{"send", cport, local, []string{"send", "-r", "--sessions", "2", "--limit-rate", "8M", "tree", srv.addr}, local, root, "reconnecting"},
		{"get", cport, back, []string{"get", "-r", "--sessions", "2", "--limit-rate", "8M", target(srv.addr, "tree"), "."}, root, back, "reconnecting"},
		// A data connection: the server says so in an E, and the
		// session is lost all the same (it was taken for a refusal).
		{"get, data connection", dport, t.TempDir(), []string{"get", "-r", "--sessions", "2", "--limit-rate", "8M", target(srv.addr, "tree"), "."}, root, "", "reconnecting"},
		{"send, no reconnect", cport, local, []string{"send", "-r", "--sessions", "2", "--reconnect", "0", "--limit-rate", "8M", "tree", target(srv.addr, "again")}, local, filepath.Join(root, "again"), "another"},
		{"get, no reconnect", cport, t.TempDir(), []string{"get", "-r", "--sessions", "2", "--reconnect", "0", "--limit-rate", "8M", target(srv.addr, "tree"), "."}, root, "", "another"},
	} {
		if c.to == "" {
			c.to = c.dir
		}
		t.Run(c.what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := kerfCmd(t, ctx, srv, c.dir, []string{"--json"}, c.args[0], c.args[1:]...)
			// Once a few files are done (both sessions under way), reset
			// one session's control connection.
			done := 0
			stdout, stderr, killed, err := runResetting(t, cmd, func(line string) bool {
				if strings.Contains(line, `"file_done"`) {
					done++
				}
				return done == 4
			}, func() string { return resetOneConnection(t, c.port) })
			if killed == "" {
				t.Fatalf("no connection was reset (%d files done):\n%s", done, stdout.String())
			}
			if err != nil {
				t.Fatalf("kerf %s with a session reset (%s): %v\nstdout:\n%s\nstderr:\n%s", c.what, killed, err, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), c.said) {
				t.Errorf("no %q on stderr (was a session lost?):\n%s", c.said, stderr.String())
			}
			evs := parseEvents(t, stdout.String())
			last := evs[len(evs)-1]
			if last.Event != "done" || last.Bytes != n*size || last.Files == nil || *last.Files != n {
				t.Errorf("last event %+v, want done with %d files, %d bytes", last, n, n*size)
			}
			count := map[string]int{}
			for _, e := range eventsNamed(evs, "file_done") {
				count[e.Name]++
			}
			// A file told failed by the lost session and got whole
			// after all has that said of it, for a script counting
			// file_error events.
			failed := map[string]bool{}
			for _, e := range evs {
				switch {
				case e.Event == "file_error":
					failed[e.Name] = true
				case e.Withdrawn && failed[e.Name]:
					delete(failed, e.Name)
				case e.Withdrawn:
					t.Errorf("%s: %s says error_withdrawn, with no file_error before it", e.Name, e.Event)
				}
			}
			for name := range failed {
				t.Errorf("%s: a file_error never withdrawn, yet the command ended well", name)
			}
			for _, name := range names {
				if count[name] != 1 {
					t.Errorf("%s: %d file_done events, want 1", name, count[name])
				}
				sameFile(t, filepath.Join(c.from, name), filepath.Join(c.to, name))
			}
		})
	}
}

// resetOneConnection resets (ss -K) one established connection from a
// client to the server's control port, and returns which.
func resetOneConnection(t *testing.T, port string) string {
	t.Helper()
	out, err := exec.Command("ss", "-tnH", "state", "established", "dst", "127.0.0.1", "dport", "=", port).Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		t.Fatalf("no connection to port %s to reset: %q", port, out)
	}
	local := fields[2] // Recv-Q, Send-Q, local address, peer address
	out, err = exec.Command("ss", "-K", "-tnH", "src", local, "dst", "127.0.0.1", "dport", "=", port).CombinedOutput()
	if err != nil || !strings.Contains(string(out), local) {
		t.Fatalf("ss -K %s: %v %q (the kernel needs CONFIG_INET_DIAG_DESTROY, and the test CAP_NET_ADMIN)", local, err, out)
	}
	return local
}

// runResetting runs cmd, reading its --json events from stdout; at the
// first line for which when says so, reset resets a connection (and
// says which). It returns what cmd printed, which connection was reset
// ("" if none), and how cmd ended.
func runResetting(t *testing.T, cmd *exec.Cmd, when func(line string) bool, reset func() string) (stdout, stderr *bytes.Buffer, killed string, err error) {
	t.Helper()
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		stdout.WriteString(line + "\n")
		if killed == "" && when(line) {
			killed = reset()
		}
	}
	return stdout, stderr, killed, cmd.Wait()
}
