package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// noTreeFS is a server tree without ListTree: a server that does not
// list trees answers kerf-tree with E.
type noTreeFS struct{ kermit.ServerFS }

// A resuming sender's quick check lists the server's tree once and
// leaves out the files it has whole (size, time to the second, and
// permissions): the rest, and every directory, are still to be sent.
// A listing long enough to need a text transaction of many packets is
// read whole; a server that does not list trees gets every file.
func TestSkipWhole(t *testing.T) {
	local, remote := t.TempDir(), t.TempDir()
	when := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var files []kermit.OutgoingFile
	put := func(root, name string, data string, mode fs.FileMode, mt time.Time) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		os.Chtimes(p, mt, mt)
	}
	add := func(name, data string, mode fs.FileMode) {
		put(local, name, data, mode, when)
		p := filepath.Join(local, filepath.FromSlash(name))
		files = append(files, kermit.OutgoingFile{Name: name, Size: int64(len(data)), ModTime: when, Mode: mode, ModeKnown: true,
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	files = append(files, kermit.OutgoingFile{Name: "tree", Dir: true, Mode: 0o755, ModeKnown: true, ModTime: when})
	// 400 files whole on the server: a listing of about 30 KB.
	var whole []string
	for i := range 400 {
		n := fmt.Sprintf("tree/many/file-%03d.dat", i)
		add(n, "same", 0o644)
		put(remote, n, "same", 0o644, when)
		whole = append(whole, n)
	}
	for _, c := range []struct {
		name, data string
		remote     string
		mode       fs.FileMode
		mt         time.Time
	}{
		{"tree/same.txt", "same", "same", 0o644, when},
		{"tree/with space/new\nline", "same", "same", 0o644, when},
		{"top file", "same", "same", 0o644, when.Add(999 * time.Millisecond)}, // to the second
		{"tree/longer.txt", "longer", "short", 0o644, when},
		{"tree/older.txt", "same", "same", 0o644, when.Add(-time.Second)},
		{"tree/mode.txt", "same", "same", 0o600, when},
		{"tree/new.txt", "new", "", 0, time.Time{}},
	} {
		add(c.name, c.data, 0o644)
		if c.remote != "" {
			put(remote, c.name, c.remote, c.mode, c.mt)
		}
	}
	// A directory on the server where the sender has a file, and the
	// other way round.
	add("tree/was-dir", "x", 0o644)
	os.MkdirAll(filepath.Join(remote, "tree/was-dir"), 0o755)
	os.MkdirAll(filepath.Join(remote, "tree/same.txt.d"), 0o755)
	whole = append(whole, "tree/same.txt", "tree/with space/new\nline", "top file")
	wantSent := []string{"tree", "tree/longer.txt", "tree/older.txt", "tree/mode.txt", "tree/new.txt", "tree/was-dir"}

	for _, lists := range []bool{true, false} {
		t.Run(fmt.Sprintf("lists=%v", lists), func(t *testing.T) {
			dir, err := filestore.Open(remote)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			var fsys kermit.ServerFS = dir
			if !lists {
				fsys = noTreeFS{dir}
			}
			var got fileEndings
			ccfg := kermit.DefaultConfig()
			ccfg.Events = got.note
			cli, srv := dualSessions(t, ccfg, kermit.DefaultConfig(), nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			go srv.Serve(ctx, fsys)
			send, err := cli.SkipWhole(ctx, slices.Clone(files))
			if err != nil {
				t.Fatalf("SkipWhole: %v", err)
			}
			var names []string
			for _, f := range send {
				names = append(names, f.Name)
			}
			want := wantSent
			if !lists {
				want = nil
				for _, f := range files {
					want = append(want, f.Name)
				}
			}
			slices.Sort(names)
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(names, want) {
				t.Errorf("to send: %q\nwant %q", names, want)
			}
			for _, n := range whole {
				e := got.of(n)
				if lists && (e.Kind != kermit.FileSkipped || !errors.Is(e.Err, kermit.ErrAlreadyThere)) {
					t.Errorf("%q: %+v; want skipped, already there", n, e)
				}
				if !lists && e.Kind != 0 {
					t.Errorf("%q: %+v without a listing", n, e)
				}
			}
			// The session is still fit for a command.
			if _, err := cli.Generic(ctx, 'A'); err != nil {
				t.Errorf("pwd after the quick check: %v", err)
			}
		})
	}
}
