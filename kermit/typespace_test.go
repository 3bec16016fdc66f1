package kermit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// REMOTE TYPE shows a file's text (several files one after another, up
// to a bound: a longer one is refused, to be fetched); REMOTE SPACE the
// free space where the tree is.
func TestRemoteTypeAndSpace(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("first line\nsecond line\n"), 0o644)
	os.WriteFile(filepath.Join(root, "b.txt"), []byte("bee\n"), 0o644)
	os.WriteFile(filepath.Join(root, "big.bin"), make([]byte, 2<<20), 0o644)
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	a, b := link(t, 0, 1)
	cli, srv := kermit.NewSession(a, kermit.DefaultConfig()), kermit.NewSession(b, kermit.DefaultConfig())
	t.Cleanup(func() { cli.Close(); srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx, dir)
	if out, err := cli.Generic(ctx, 'T', "a.txt"); err != nil || out != "first line\nsecond line\n" {
		t.Errorf("TYPE a.txt: %q, %v", out, err)
	}
	if out, err := cli.Generic(ctx, 'T', "*.txt"); err != nil || out != "first line\nsecond line\nbee\n" {
		t.Errorf("TYPE *.txt: %q, %v", out, err)
	}
	if _, err := cli.Generic(ctx, 'T', "big.bin"); err == nil || !strings.Contains(err.Error(), "too long to type") {
		t.Errorf("TYPE of 2 MiB: %v, want a refusal", err)
	}
	if _, err := cli.Generic(ctx, 'T', "nothing.txt"); err == nil {
		t.Error("TYPE of a missing file succeeded")
	}
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	if _, err := cli.Generic(ctx, 'T', "sub"); err == nil {
		t.Error("TYPE of a directory gave an empty text, not an error")
	}
	out, err := cli.Generic(ctx, 'U')
	if err != nil || !strings.HasSuffix(out, " bytes free") {
		t.Errorf("SPACE: %q, %v", out, err)
	}
}
