package control_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/auth"
	"kerf/control"
	"kerf/internal/peertest"
)

// C-Kermit as a classic client of kerf serve --allow-classic: REMOTE
// LOGIN, anonymous access, and the refusals, as a user would script it.
func TestCKermitClassicClient(t *testing.T) {
	bin := peertest.RequirePeer(t, "kermit")
	const okSteps = `send up.bin
if fail exit 2 "send failed"
get down.bin
if fail exit 3 "get failed"
remote directory
if fail exit 4 "remote directory failed"
finish
if fail exit 5 "finish failed"`
	cases := []struct {
		name      string
		classic   bool // server allows classic Kermit
		anonymous bool
		steps     string
		wantExit  int
		wantOut   string
		sent, got bool
	}{
		{"remote login", true, false, "remote login carol ck-pass\nif fail exit 9 \"login failed\"\n" + okSteps, 0, "down.bin", true, true},
		// SET PARITY over TCP: C-Kermit writes 7-bit with parity and
		// 8th-bit prefixing; the server finds the parity and follows.
		{"parity even", true, false, "set parity even\nremote login carol ck-pass\nif fail exit 9 \"login failed\"\n" + okSteps, 0, "down.bin", true, true},
		{"parity odd", true, false, "set parity odd\nremote login carol ck-pass\nif fail exit 9 \"login failed\"\n" + okSteps, 0, "down.bin", true, true},
		{"parity mark", true, false, "set parity mark\nremote login carol ck-pass\nif fail exit 9 \"login failed\"\n" + okSteps, 0, "down.bin", true, true},
		// Without attribute packets the server streams a GET's data
		// right after the F; the session hung after the first file.
		{"attributes off", true, false, "set attributes off\nremote login carol ck-pass\nif fail exit 9 \"login failed\"\n" + okSteps, 0, "down.bin", true, true},
		{"wrong password", true, false, "remote login carol wrong\nif fail exit 9 \"login failed\"\n" + okSteps, 9, "login failed", false, false},
		{"anonymous reads only", true, true, "get down.bin\nif fail exit 3\nsend up.bin\nif success exit 7 \"read-only send succeeded\"\nremote directory\nif fail exit 4", 0, "down.bin", false, true},
		{"no login", true, false, "get down.bin\nif success exit 8 \"get without login succeeded\"\nremote directory\nif success exit 8 \"listing without login succeeded\"", 0, "", false, false},
		// A file kerf refuses (a name leading out of the tree) is a failure
		// to C-Kermit too: refused for its "name" (N?) it would count as
		// skipped on purpose, status 0.
		{"refused file fails", true, false, "remote login carol ck-pass\nif fail exit 9 \"login failed\"\nsend /as-name:../up.bin up.bin\nif success exit 7 \"refused send succeeded\"", 0, "", false, false},
		{"classic off", false, true, "send up.bin\nif success exit 7 \"send succeeded\"\nget down.bin\nif success exit 8 \"get succeeded\"", 0, "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newJail(t)
			before := snapshot(t, j.outside)
			local := t.TempDir()
			up, down := rnd(200000, 31), rnd(150001, 32)
			must(t, os.WriteFile(filepath.Join(local, "up.bin"), up, 0o644))
			must(t, os.WriteFile(filepath.Join(j.root, "down.bin"), down, 0o644))
			srv := startServerWith(t, j.root, func(c *control.ServerConfig) {
				c.AllowClassic, c.Anonymous = tc.classic, tc.anonymous
				c.Users = testUsers(t, auth.User{Name: "carol", Secret: auth.HashPassword("ck-pass", testArgon)})
			})
			host, port, _ := net.SplitHostPort(srv.Addr().String())
			script := fmt.Sprintf("set host %s %s /raw-socket\nif fail exit 1 \"connect failed\"\nset file type binary\nset transfer display brief\n%s\nexit 0\n", host, port, tc.steps)
			ksc := filepath.Join(t.TempDir(), "script.ksc")
			must(t, os.WriteFile(ksc, []byte(script), 0o644))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, ksc, "-Y")
			cmd.Dir = local
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("C-Kermit:\n%s", out.String())
			if code != tc.wantExit || !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("C-Kermit exit %d (want %d), output lacks %q?\n%s", code, tc.wantExit, tc.wantOut, out.String())
			}
			gotUp, _ := os.ReadFile(filepath.Join(j.root, "up.bin"))
			if bytes.Equal(gotUp, up) != tc.sent {
				t.Errorf("upload arrived = %v, want %v", bytes.Equal(gotUp, up), tc.sent)
			}
			gotDown, _ := os.ReadFile(filepath.Join(local, "down.bin"))
			if bytes.Equal(gotDown, down) != tc.got {
				t.Errorf("download arrived = %v, want %v", bytes.Equal(gotDown, down), tc.got)
			}
			j.untouched(t, before)
		})
	}
}
