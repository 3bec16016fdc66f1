package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// kerf, and a group of commands, with no command after it shows the help
// and is a usage error, exit 2: a script whose $CMD came out empty did
// nothing and exited 0 (QA ak). --help is not an error.
func TestNoCommandIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{{nil, 2}, {[]string{"serial"}, 2}, {[]string{"user"}, 2}, {[]string{"--help"}, 0}, {[]string{"serial", "--help"}, 0}} {
		out, err := exec.Command(kerfBin, tc.args...).CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || len(out) == 0 {
			t.Errorf("kerf %v: exit %d, %d bytes of output; want %d with the help", tc.args, code, len(out), tc.code)
		}
	}
	// With --json, standard output is the error event alone.
	out, err := exec.Command(kerfBin, "--json").Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), `{"event":"error"`) || strings.Count(string(out), "\n") != 1 {
		t.Errorf("kerf --json: %v, stdout %q; want exit 2 and one error event", err, out)
	}
}
