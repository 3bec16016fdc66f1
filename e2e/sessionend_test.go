package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A session's end line names the files that failed in it, not only how
// many: a killed upload's said "files_failed=1" and no name, unless the
// server kept an --xferlog (QA as F6).
func TestSessionEndNamesFailedFiles(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "big file.bin"), randomBytes(32<<20, 5))
	srv := startServer(t, root, serverOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := kerfCmd(t, ctx, srv, local, nil, "send", "--limit-rate", "4M", "big file.bin", srv.addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the partial", func() bool { return fileSize(filepath.Join(root, partName("big file.bin"))) > 0 })
	cmd.Process.Kill()
	cmd.Wait()
	line := waitLogLine(t, srv, `msg="session end"`)
	if !strings.Contains(line, "files_failed=1") || !strings.Contains(line, `failed="big file.bin"`) {
		t.Errorf("session end: %s\nwant files_failed=1 and the file named", line)
	}
}
