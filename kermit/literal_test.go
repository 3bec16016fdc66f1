package kermit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"kerf/filestore"
)

// REMOTE SET kerf-literal makes the next REMOTE DELETE take its name as
// it is (an absent "d[12].bin" deletes nothing), holds for that command
// only (the one after matches again), and refuses to go with any other
// generic command, which clears it, as a GET does.
func TestLiteralNextCommandOnly(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"d1.bin", "d2.bin", "x.txt"} {
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
	}
	cli, ctx := servedClient(t, root)
	exists := func(n string) bool { _, err := os.Stat(filepath.Join(root, n)); return err == nil }

	if err := cli.TakeNextLiterally(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Generic(ctx, 'E', "d[12].bin"); err == nil {
		t.Error("a literal delete of an absent name gave no error")
	}
	if !exists("d1.bin") || !exists("d2.bin") {
		t.Fatal("a literal delete of an absent name deleted what it matches")
	}
	if err := cli.TakeNextLiterally(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Generic(ctx, 'A'); err == nil {
		t.Error("kerf-literal went with a REMOTE PWD")
	}
	// Cleared by the refused command: the next delete matches again.
	if _, err := cli.Generic(ctx, 'E', "d[12].bin"); err != nil {
		t.Fatalf("delete of a pattern: %v", err)
	}
	if exists("d1.bin") || exists("d2.bin") || !exists("x.txt") {
		t.Error("the pattern's delete after a refused kerf-literal did not delete d1.bin and d2.bin alone")
	}
	// A GET between clears it too: the delete after matches.
	for _, n := range []string{"d1.bin", "d2.bin"} {
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
	}
	if err := cli.TakeNextLiterally(ctx); err != nil {
		t.Fatal(err)
	}
	store, _ := filestore.Open(t.TempDir())
	if err := cli.Get(ctx, "x.txt", false, store); err != nil {
		t.Fatalf("get: %v", err)
	}
	if _, err := cli.Generic(ctx, 'E', "d[12].bin"); err != nil || exists("d1.bin") || exists("d2.bin") {
		t.Errorf("delete of a pattern after kerf-literal and a GET: %v; d1.bin %v, d2.bin %v", err, exists("d1.bin"), exists("d2.bin"))
	}
	if _, err := cli.Generic(ctx, 'S', "kerf-literal", "off"); err == nil {
		t.Error("kerf-literal off was taken")
	}
}

// A REMOTE DELETE's answer names the files a pattern removed, not the
// pattern (QA ae: C-Kermit showed "deleted *.log"), up to twenty and the
// count of the rest; one file by its name.
func TestRemoteDeleteAnswerNamesTheFiles(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a.log", "b.log", "keep.txt", "one.txt", `back\slash.bak`} {
		os.WriteFile(filepath.Join(root, n), []byte(n), 0o644)
	}
	for i := range 25 {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("m%02d.tmp", i)), nil, 0o644)
	}
	cli, ctx := servedClient(t, root)
	for _, c := range []struct{ spec, want string }{
		{"*.log", "deleted 2 files: a.log, b.log"},
		{"one.txt", "deleted one.txt"},
		{"*.bak", `deleted "back\\slash.bak"`}, // quoted: read back as itself
		{"*.tmp", "deleted 25 files: m00.tmp, m01.tmp, m02.tmp, m03.tmp, m04.tmp, m05.tmp, m06.tmp, m07.tmp, m08.tmp, m09.tmp, m10.tmp, m11.tmp, m12.tmp, m13.tmp, m14.tmp, m15.tmp, m16.tmp, m17.tmp, m18.tmp, m19.tmp and 5 more"},
	} {
		if got, err := cli.Generic(ctx, 'E', c.spec); err != nil || got != c.want {
			t.Errorf("REMOTE DELETE %s: %q, %v; want %q", c.spec, got, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "keep.txt")); err != nil {
		t.Error("keep.txt removed")
	}
}
