package kermit_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// inoOf is path's inode number.
func inoOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(fi.Sys().(*syscall.Stat_t).Ino)
}

// sameFiles writes name with the same bytes, mode and time under each
// root.
func sameFiles(t *testing.T, name string, roots ...string) {
	t.Helper()
	when := time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)
	for _, r := range roots {
		p := filepath.Join(r, name)
		if err := os.WriteFile(p, []byte("the same bytes"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o644)
		os.Chtimes(p, when, when)
	}
}

// outgoing is the file at path, sent as name.
func outgoing(t *testing.T, name, path string) kermit.OutgoingFile {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return kermit.OutgoingFile{Name: name, Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode().Perm(), ModeKnown: true, Path: path,
		Open: func() (kermit.FileReader, error) { return os.Open(path) }}
}

// A receiver that has a resumed file already there says which file it
// is, by inode number, both in its answer to the A and in a tree
// listing, so that a sender removing its files can tell its very file
// seen through a file system both machines mount (NFS) from a copy.
// A kerf from before the bit gets, and gives, no number.
func TestAlreadyThereCarriesInode(t *testing.T) {
	remote, local := t.TempDir(), t.TempDir()
	sameFiles(t, "very", remote)
	sameFiles(t, "copy", remote, local)
	files := []kermit.OutgoingFile{
		outgoing(t, "very", filepath.Join(remote, "very")), // the server's own file
		outgoing(t, "copy", filepath.Join(local, "copy")),
	}
	veryIno, copyIno := inoOf(t, filepath.Join(remote, "very")), inoOf(t, filepath.Join(remote, "copy"))
	if copyIno == inoOf(t, filepath.Join(local, "copy")) {
		t.Fatal("the two copies share an inode number")
	}
	for _, c := range []struct {
		name     string
		old      bool // the client a kerf from before the bit
		listing  bool // SkipWhole's listing, else the engine's A
		wantInos bool
	}{
		{"answer to A", false, false, true},
		{"tree listing", false, true, true},
		{"answer to A, older client", true, false, false},
		{"tree listing, older client", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got fileEndings
			ccfg := kermit.DefaultConfig()
			ccfg.Resume = true
			ccfg.Events = got.note
			if c.old {
				ccfg = kermit.WithoutInodes(ccfg)
			}
			cli, ctx := servedClientWith(t, remote, ccfg, nil)
			if c.listing {
				left, err := cli.SkipWhole(ctx, files, nil)
				if err != nil || len(left) != 0 {
					t.Fatalf("SkipWhole left %d files, %v", len(left), err)
				}
			} else if err := cli.Send(ctx, files); err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]uint64{"very": veryIno, "copy": copyIno} {
				e := got.of(name)
				if !c.wantInos {
					want = 0
				}
				if e.Kind != kermit.FileSkipped || !errors.Is(e.Err, kermit.ErrAlreadyThere) || e.ThereIno != want {
					t.Errorf("%s: %v %v, inode %d; want already there, inode %d", name, e.Kind, e.Err, e.ThereIno, want)
				}
			}
		})
	}
}

// A server asked to remove what a GET sends keeps a file the client
// found already there under the file's own inode number (the client
// reaches the server's tree through a shared file system), and removes
// one the client has a copy of. The server's session here does not know
// its client is on this machine (Config.PeerLocal), as a server would
// not across NFS.
func TestSentRemovalKeepsTheVeryFile(t *testing.T) {
	remote, local := t.TempDir(), t.TempDir()
	sameFiles(t, "very", remote)
	sameFiles(t, "copy", remote, local)
	var log syncBuf
	scfg := kermit.DefaultConfig()
	scfg.Log = slog.New(slog.NewTextHandler(&log, nil))
	dir, err := filestore.Open(remote)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	ccfg := kermit.DefaultConfig()
	cli, srv := dualSessions(t, ccfg, scfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx, dir)
	for _, c := range []struct{ name, into string }{{"very", remote}, {"copy", local}} {
		store, err := filestore.Open(c.into)
		if err != nil {
			t.Fatal(err)
		}
		if err := cli.GetWith(ctx, c.name, kermit.GetOptions{Resume: true, RemoveSource: true}, store); err != nil {
			t.Fatalf("get %s: %v", c.name, err)
		}
		store.Close()
	}
	if _, err := os.Stat(filepath.Join(remote, "very")); err != nil {
		t.Errorf("the very file the client had: %v (server log: %s)", err, log.String())
	}
	if _, err := os.Stat(filepath.Join(remote, "copy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file the client has a copy of is still there: %v", err)
	}
	if !strings.Contains(log.String(), "inode") {
		t.Errorf("server log does not say why the file stayed: %s", log.String())
	}
}
