package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

// kerf --version and -V print one line naming the Go release it was
// built with, and exit without running a command.
func TestVersionFlag(t *testing.T) {
	for _, flag := range []string{"--version", "-V"} {
		app := newApp()
		var out bytes.Buffer
		app.Writer = &out
		if err := runApp(context.Background(), app, []string{"kerf", flag}); err != nil {
			t.Fatalf("kerf %s: %v", flag, err)
		}
		line := out.String()
		if !strings.HasPrefix(line, "kerf ") || !strings.Contains(line, runtime.Version()) || strings.Count(line, "\n") != 1 {
			t.Errorf("kerf %s printed %q", flag, line)
		}
	}
}
