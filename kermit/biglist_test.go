package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// Text transactions longer than the window (a listing of 6,000 names,
// about 330 KB, is 37 packets of 9 KB) go through whole in both
// directions, on a classic link and in dual-channel mode, where the
// receiver streams and ACKs no D packet: a sender that waited for those
// ACKs stalled once its window was full (kerf ls of a big directory
// hung).
func TestLongTextTransactions(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "big"), 0o755)
	const n = 6000
	for i := range n {
		os.WriteFile(filepath.Join(root, "big", fmt.Sprintf("file-%05d", i)), nil, 0o644)
	}
	for _, dual := range []bool{false, true} {
		t.Run(fmt.Sprintf("dual=%v", dual), func(t *testing.T) {
			dir, err := filestore.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			oc := &openCounter{Dir: dir, opened: map[string]int{}}
			var cli, srv *kermit.Session
			if dual {
				cli, srv = dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
			} else {
				a, b := link(t, 0, 1)
				cli, srv = kermit.NewSession(a, kermit.DefaultConfig()), kermit.NewSession(b, kermit.DefaultConfig())
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			go srv.Serve(ctx, oc)
			out, err := cli.Generic(ctx, 'D', "big")
			if lines := strings.Count(out, "\n"); err != nil || lines != n {
				t.Fatalf("REMOTE DIRECTORY: %d lines, %v; want %d", lines, err, n)
			}
			tree, err := cli.ListTree(ctx, "big")
			if err != nil || len(tree) != n+1 {
				t.Fatalf("ListTree: %d entries, %v; want %d", len(tree), err, n+1)
			}
			// The client's kerf-skip text, as long: every file is left out.
			list, err := cli.GetListing(ctx, "big", true)
			if err != nil || len(list) != n {
				t.Fatalf("GetListing: %d entries, %v; want %d", len(list), err, n)
			}
			st, err := filestore.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := cli.GetWith(ctx, "big", kermit.GetOptions{Recursive: true, Resume: true, Skip: list}, st); err != nil {
				t.Fatalf("GET with %d skipped: %v", len(list), err)
			}
			if len(oc.opened) != 0 {
				t.Errorf("the server opened %d files the client said it had", len(oc.opened))
			}
		})
	}
}

// A GET after a listing too long for one packet, in one session, gets
// its files: the listing's X took a file id on both sides, so the GET's
// blocks carry the ids the client expects. (The client counted the X and
// the server did not: the blocks of the next files went astray, and a
// resumed get of a tree of 300 files hung or failed.)
func TestGetAfterLongListing(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "big"), 0o755)
	for i := range 600 {
		os.WriteFile(filepath.Join(root, "big", fmt.Sprintf("file-%05d", i)), []byte(fmt.Sprintf("data %d", i)), 0o644)
	}
	cli, ctx := servedClient(t, root)
	list, err := cli.GetListing(ctx, "big", true)
	if err != nil || len(list) != 600 {
		t.Fatalf("GetListing: %d, %v", len(list), err)
	}
	dst := t.TempDir()
	st, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := cli.GetWith(ctx, "big", kermit.GetOptions{Recursive: true, Resume: true, Skip: list[1:]}, st); err != nil {
		t.Fatalf("GET after the listing: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "big", "file-00000")); err != nil || string(b) != "data 0" {
		t.Errorf("the one file not skipped: %q, %v", b, err)
	}
}

// A reply longer than a client keeps in memory fails with words saying
// so, and the session is still there for the next command.
func TestTextReplyBounded(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "big"), 0o755)
	for i := range 2000 {
		os.WriteFile(filepath.Join(root, "big", fmt.Sprintf("file-%05d", i)), nil, 0o644)
	}
	defer kermit.SetMaxTextReply(64 << 10)()
	cli, ctx := servedClient(t, root)
	if _, err := cli.Generic(ctx, 'D', "big"); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("REMOTE DIRECTORY of a reply past the bound: %v, want an error saying it is too long", err)
	}
	if _, err := cli.ListTree(ctx, "big"); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("ListTree past the bound: %v", err)
	}
	if out, err := cli.Generic(ctx, 'D', "big/file-00001"); err != nil || !strings.Contains(out, "file-00001") {
		t.Fatalf("a short listing after: %q, %v", out, err)
	}
}
