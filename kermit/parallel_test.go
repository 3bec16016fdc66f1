package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// watchedStore is a receiving store that checks, as each file begins,
// that its directory is no more open than the sender's.
type watchedStore struct {
	*filestore.Dir
	root  string
	modes map[string]os.FileMode // the sender's directories
	mu    sync.Mutex
	bad   []string
}

func (w *watchedStore) Create(name string) (kermit.Incoming, error) {
	dir := path.Dir(name)
	if fi, err := os.Stat(filepath.Join(w.root, dir)); err == nil {
		if extra := fi.Mode().Perm() &^ w.modes[dir] & 0o077; extra != 0 {
			w.mu.Lock()
			w.bad = append(w.bad, fmt.Sprintf("%s arrived in %s, mode %v (the sender's %v)", name, dir, fi.Mode().Perm(), w.modes[dir]))
			w.mu.Unlock()
		}
	}
	return w.Dir.Create(name)
}

// A tree sent over several sessions arrives whole, its files spread over
// the sessions; its directories are private from the first file on and
// get their exact permissions and times once every session is done.
func TestSendParallel(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	when := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	dirs := []struct {
		name string
		mode os.FileMode
	}{{"top", 0o750}, {"top/private", 0o700}, {"top/ro", 0o555}, {"top/open", 0o755}, {"top/private/deep", 0o711}}
	modes := map[string]os.FileMode{}
	var out []kermit.OutgoingFile
	n := 0
	for i, d := range dirs {
		modes[d.name] = d.mode
		out = append(out, kermit.OutgoingFile{Name: d.name, Dir: true, Filled: true,
			ModTime: when.Add(time.Duration(i) * time.Hour), Mode: d.mode, ModeKnown: true})
		for j := 0; j < 40; j++ {
			n++
			p := filepath.Join(src, fmt.Sprint(n))
			body := []byte(fmt.Sprintf("%s file %d %0*d", d.name, j, 100*j, 7))
			if err := os.WriteFile(p, body, 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, when, when) // as announced
			out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("%s/f%d", d.name, j), Size: int64(len(body)), Mode: 0o640,
				ModTime: when, Open: func() (kermit.FileReader, error) { return os.Open(p) }})
		}
	}
	out = append(out, kermit.OutgoingFile{Name: "top/empty", Dir: true, ModTime: when, Mode: 0o701, ModeKnown: true})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var senders []*kermit.Session
	var took [3]atomic.Int32
	var wg sync.WaitGroup
	var stores []*watchedStore
	for i := range took {
		scfg := kermit.DefaultConfig()
		scfg.Events = func(e kermit.Event) {
			if e.Kind == kermit.FileDone {
				took[i].Add(1)
			}
		}
		send, recv := dualSessions(t, scfg, kermit.DefaultConfig(), nil)
		senders = append(senders, send)
		dir, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dir.Close() })
		store := &watchedStore{Dir: dir, root: dst, modes: modes}
		stores = append(stores, store)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for recv.Receive(ctx, store) == nil { // a group each
			}
		}()
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dst, "top/ro"), 0o755) })
	if err := kermit.SendParallel(ctx, senders, out); err != nil {
		t.Fatal(err)
	}
	cancel() // the receivers wait for a next group
	wg.Wait()

	total := 0
	for i := range took {
		if took[i].Load() == 0 {
			t.Errorf("session %d sent no file", i)
		}
		total += int(took[i].Load())
	}
	if total != n {
		t.Errorf("%d files reported done, want %d", total, n)
	}
	for _, f := range out {
		p := filepath.Join(dst, f.Name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if f.Dir {
			if fi.Mode().Perm() != f.Mode.Perm() || !fi.ModTime().Equal(f.ModTime) {
				t.Errorf("directory %s: mode %v, time %v; want %v, %v", f.Name, fi.Mode().Perm(), fi.ModTime().UTC(), f.Mode.Perm(), f.ModTime)
			}
			continue
		}
		r, _ := f.Open()
		want := make([]byte, f.Size)
		r.ReadAt(want, 0)
		r.Close()
		if got, err := os.ReadFile(p); err != nil || string(got) != string(want) {
			t.Errorf("%s: %q, %v; want %q", f.Name, got, err, want)
		}
	}
	for _, s := range stores {
		for _, b := range s.bad {
			t.Error(b)
		}
	}
}

// cutConn fails its writes, and closes, after the first n.
type cutConn struct {
	net.Conn
	n atomic.Int32
}

func (c *cutConn) Write(p []byte) (int, error) {
	if c.n.Add(-1) < 0 {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

// A session that fails does not stop the others: they send every file
// it did not take. One that failed before it took a file is passed over;
// one that failed with files under way is the result, and each of its
// files is reported.
func TestSendParallelSessionFails(t *testing.T) {
	for _, early := range []bool{true, false} {
		name := "before its first file"
		if !early {
			name = "with files under way"
		}
		t.Run(name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			var out []kermit.OutgoingFile
			for j := 0; j < 60; j++ {
				p := filepath.Join(src, fmt.Sprint(j))
				os.WriteFile(p, randomBytes(20000, int64(j)), 0o644)
				fi, _ := os.Stat(p)
				out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("f%d", j), Size: fi.Size(), ModTime: fi.ModTime(),
					Open: func() (kermit.FileReader, error) { return os.Open(p) }})
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var mu sync.Mutex
			ended := map[string]kermit.EventKind{}
			events := func(e kermit.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind == kermit.FileDone || e.Kind == kermit.FileFailed || e.Kind == kermit.FileSkipped {
					if k, ok := ended[e.Name]; ok {
						t.Errorf("%s ended twice: %v, then %v", e.Name, k, e.Kind)
					}
					ended[e.Name] = e.Kind
				}
			}
			var senders []*kermit.Session
			var wg sync.WaitGroup
			for i := 0; i < 2; i++ {
				scfg := kermit.DefaultConfig()
				scfg.Events = events
				a, b := link(t, 0, 1)
				da, db := dualPair(t)
				scfg.Dual = da
				rcfg := kermit.DefaultConfig()
				rcfg.Dual = db
				scfg.Streaming, rcfg.Streaming = true, true
				if i == 1 {
					// Session 1's link breaks: at once, or after its
					// Send-Init and some files.
					cut := &cutConn{Conn: a}
					cut.n.Store(0)
					if !early {
						cut.n.Store(3)
					}
					a = cut
				}
				send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
				t.Cleanup(func() { send.Close(); recv.Close() })
				senders = append(senders, send)
				store, err := filestore.Open(dst)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { store.Close() })
				wg.Add(1)
				go func() {
					defer wg.Done()
					for recv.Receive(ctx, store) == nil {
					}
				}()
			}
			err := kermit.SendParallel(ctx, senders, out)
			cancel()
			wg.Wait()
			var ge *kermit.GroupError
			if early && err != nil {
				t.Fatalf("error %v, want none: the others sent every file", err)
			}
			if !early && (err == nil || errors.As(err, &ge)) {
				t.Fatalf("error %v, want the failed session's", err)
			}
			done := 0
			for _, f := range out {
				k, ok := ended[f.Name]
				switch {
				case !ok:
					t.Errorf("%s: never reported", f.Name)
				case k == kermit.FileDone:
					done++
					if _, err := os.Stat(filepath.Join(dst, f.Name)); err != nil {
						t.Errorf("%s reported done: %v", f.Name, err)
					}
				}
			}
			if early && done != len(out) {
				t.Errorf("%d of %d files done", done, len(out))
			}
			if !early && (done == len(out) || done == 0) {
				t.Errorf("%d of %d files done: the cut session had none under way, or the other sent none", done, len(out))
			}
		})
	}
}
