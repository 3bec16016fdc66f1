package main

import (
	"fmt"
	"os"
	"testing"
)

// TestMain fails the run if this test binary is an image that a serve
// run in-process executed again (--timer-slack's re-execution is the
// kerf program's, not its tests': it reran every test from the start and
// left the first image's temporary directories behind).
func TestMain(m *testing.M) {
	if _, again := os.LookupEnv(timerSlackEnv); again {
		fmt.Fprintf(os.Stderr, "the test binary was executed again (%s is set): an in-process serve re-executed it\n", timerSlackEnv)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
