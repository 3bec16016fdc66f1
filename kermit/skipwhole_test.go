package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
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
			send, err := cli.SkipWhole(ctx, slices.Clone(files), nil)
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

// openCounter is a server tree that counts which files a GET opens.
type openCounter struct {
	*filestore.Dir
	mu     sync.Mutex
	opened map[string]int
	auth   func(cmd string) error
}

func (o *openCounter) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	files, err := o.Dir.Match(spec, recursive)
	for i := range files {
		name, open := files[i].Name, files[i].Open
		if open == nil {
			continue
		}
		files[i].Open = func() (kermit.FileReader, error) {
			o.mu.Lock()
			o.opened[name]++
			o.mu.Unlock()
			return open()
		}
	}
	return files, err
}

func (o *openCounter) Login(string, string) error { return nil }
func (o *openCounter) Authorized(cmd string) error {
	if o.auth != nil {
		return o.auth(cmd)
	}
	return nil
}

// A resumed GET tells the server which files the client has whole, from
// one listing of the GET's files (GetListing), and the server leaves
// them out: they are never opened, and the client reports them skipped.
// One changed on the server after the listing is sent after all. With
// several sessions each tells its own share. A read-only user's S goes
// on for the skip text; a server that refuses the S for another cause
// gets every file, as before.
func TestGetSkip(t *testing.T) {
	root := t.TempDir()
	when := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var names []string
	for i := range 60 {
		n := fmt.Sprintf("tree/d%d/f%02d", i%4, i)
		p := filepath.Join(root, filepath.FromSlash(n))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, randomBytes(1000+i, int64(i)), 0o644)
		os.Chtimes(p, when, when)
		names = append(names, n)
	}
	for _, c := range []struct {
		name     string
		sessions int
		readOnly bool // the server refuses S for another cause than read-only access
	}{{"one session", 1, false}, {"three sessions", 3, false}, {"read-only user", 1, false}, {"user who may not send", 1, true}} {
		t.Run(c.name, func(t *testing.T) {
			dst := t.TempDir()
			// The client has the first 40 whole, a different f40, and a
			// f41 of another mode; nothing of the rest.
			for _, n := range names[:42] {
				data, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
				p := filepath.Join(dst, filepath.FromSlash(n))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if n == names[40] {
					data = append(data, 'x')
				}
				os.WriteFile(p, data, 0o644)
				os.Chtimes(p, when, when)
			}
			os.Chmod(filepath.Join(dst, filepath.FromSlash(names[41])), 0o600)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var sessions []*kermit.Session
			var stores []kermit.Store
			var got fileEndings
			var servers []*openCounter
			for range c.sessions {
				ccfg := kermit.DefaultConfig()
				ccfg.Events = got.note
				cli, srv := dualSessions(t, ccfg, kermit.DefaultConfig(), nil)
				dir, err := filestore.Open(root)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dir.Close() })
				oc := &openCounter{Dir: dir, opened: map[string]int{}}
				switch c.name {
				case "read-only user":
					// Its S goes on for the skip text (kermit.ErrReadOnly).
					oc.auth = func(cmd string) error {
						if cmd == "S" {
							return kermit.ErrReadOnly
						}
						return nil
					}
				case "user who may not send":
					oc.auth = func(cmd string) error {
						if cmd == "S" {
							return errors.New("login required")
						}
						return nil
					}
				}
				servers = append(servers, oc)
				go srv.Serve(ctx, oc)
				st, err := filestore.Open(dst)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				sessions, stores = append(sessions, cli), append(stores, st)
			}
			list, err := sessions[0].GetListing(ctx, "tree", true)
			if err != nil || len(list) != len(names) {
				t.Fatalf("GetListing: %d entries, %v; want %d", len(list), err, len(names))
			}
			o := kermit.GetOptions{Recursive: true, Resume: true}
			for _, e := range list {
				if stores[0].(*filestore.Dir).HasWhole(e) {
					o.Skip = append(o.Skip, e)
				}
			}
			if len(o.Skip) != 40 {
				t.Fatalf("the client has %d whole, want 40", len(o.Skip))
			}
			// Changed on the server since its listing: sent after all.
			changed := filepath.Join(root, filepath.FromSlash(names[0]))
			os.WriteFile(changed, []byte("changed"), 0o644)
			os.Chtimes(changed, when, when)
			t.Cleanup(func() { os.WriteFile(changed, randomBytes(1000, 0), 0o644); os.Chtimes(changed, when, when) })

			if err := kermit.GetParallel(ctx, sessions, "tree", o, stores); err != nil {
				t.Fatalf("GetParallel: %v", err)
			}
			opened := map[string]int{}
			for _, oc := range servers {
				for n, k := range oc.opened {
					opened[n] += k
				}
			}
			for i, n := range names {
				data, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
				if b, _ := os.ReadFile(filepath.Join(dst, filepath.FromSlash(n))); string(b) != string(data) {
					t.Errorf("%s differs", n)
				}
				skipped := i > 0 && i < 40 && !c.readOnly
				if skipped && opened[n] != 0 {
					t.Errorf("%s opened %d times; the client has it whole", n, opened[n])
				}
				if !skipped && i >= 40 && opened[n] != 1 {
					t.Errorf("%s opened %d times, want once", n, opened[n])
				}
				e := got.of(n)
				switch {
				case i == 0:
					if e.Kind != kermit.FileDone {
						t.Errorf("%s, changed on the server: %+v; want done", n, e)
					}
				case i < 40 || i == 41:
					if e.Kind != kermit.FileSkipped || !errors.Is(e.Err, kermit.ErrAlreadyThere) {
						t.Errorf("%s: %+v; want skipped, already there", n, e)
					}
				default:
					if e.Kind != kermit.FileDone {
						t.Errorf("%s: %+v; want done", n, e)
					}
				}
			}
			if fi, err := os.Stat(filepath.Join(dst, filepath.FromSlash(names[41]))); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("%s: %v, %v; want the server's mode 0644", names[41], fi, err)
			}
		})
	}
}

// A resumed send sends the files with a partial on the server last: the
// session cut off while sending one may hold it until the server takes
// it over, and the other files need not wait for that. Directories keep
// their place (before what is in them); the rest keep their order.
func TestSkipWholeSendsPartialsLast(t *testing.T) {
	local, remote := t.TempDir(), t.TempDir()
	var files []kermit.OutgoingFile
	files = append(files, kermit.OutgoingFile{Name: "t", Dir: true, Mode: 0o755, ModeKnown: true, ModTime: time.Now()})
	for _, n := range []string{"t/a", "t/b", "t/c", "t/d", "t/e"} {
		p := filepath.Join(local, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(n), 0o644)
		fi, _ := os.Stat(p)
		files = append(files, kermit.OutgoingFile{Name: n, Size: fi.Size(), ModTime: fi.ModTime(), Mode: 0o644, ModeKnown: true,
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	os.MkdirAll(filepath.Join(remote, "t"), 0o755)
	for _, n := range []string{"t/.b.kerf-part", "t/.d.kerf-part"} {
		os.WriteFile(filepath.Join(remote, n), []byte("x"), 0o644)
	}
	cli, ctx := servedClient(t, remote)
	send, err := cli.SkipWhole(ctx, files, func(name string) string {
		d, b := path.Split(name)
		return d + filestore.TempName(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range send {
		names = append(names, f.Name)
	}
	if want := []string{"t", "t/a", "t/c", "t/e", "t/b", "t/d"}; !slices.Equal(names, want) {
		t.Errorf("to send: %q, want %q", names, want)
	}
}
