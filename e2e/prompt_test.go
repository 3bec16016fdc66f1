package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// A password typed wrong at the prompt is asked for again, as ssh does:
// three tries, then the login fails (exit 3).
func TestPasswordPromptAsksAgain(t *testing.T) {
	root := t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, root+"/seen.txt", []byte("x"))
	for _, c := range []struct {
		name    string
		answers []string
		code    int
	}{
		{"second try", []string{"wrong", testPassword}, 0},
		{"third try", []string{"wrong", "wrong again", testPassword}, 0},
		{"three wrong", []string{"a", "b", "c"}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv, env := clientInvocation(t, srv, nil, "ls", target(srv.addr, "/"))
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, kerfBin, argv...)
			cmd.Env = append(env, "KERF_PASSWORD=") // the last one counts
			tty, err := pty.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			var out bytes.Buffer
			r := bufio.NewReader(io.TeeReader(tty, &out))
			prompts := 0
			for _, a := range c.answers {
				if err := readUntil(r, "Password for "); err != nil {
					t.Fatalf("prompt %d never came (%v):\n%s", prompts+1, err, out.String())
				}
				prompts++
				tty.Write([]byte(a + "\n"))
			}
			io.Copy(io.Discard, r) // until the client exits (EIO)
			err = cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, out.String())
			}
			if more := strings.Count(out.String(), "Password for "); more != len(c.answers) {
				t.Errorf("asked %d times, want %d:\n%s", more, len(c.answers), out.String())
			}
			if c.code == 0 && !strings.Contains(out.String(), "seen.txt") {
				t.Errorf("listing lacks seen.txt:\n%s", out.String())
			}
		})
	}
}

// readUntil reads r until it has read s; the command's own timeout
// (exec.CommandContext) ends a wait for a prompt that never comes.
func readUntil(r *bufio.Reader, s string) error {
	var seen []byte
	for !bytes.HasSuffix(seen, []byte(s)) {
		b, err := r.ReadByte()
		if err != nil {
			return err
		}
		seen = append(seen, b)
	}
	return nil
}
