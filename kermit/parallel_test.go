package kermit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
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
		w.mu.Lock()
		if extra := fi.Mode().Perm() &^ w.modes[dir] & 0o077; extra != 0 {
			w.bad = append(w.bad, fmt.Sprintf("%s arrived in %s, mode %v (the sender's %v)", name, dir, fi.Mode().Perm(), w.modes[dir]))
		}
		if fi.Mode().Perm()&0o200 == 0 {
			// Root writes there all the same; its owner would not.
			w.bad = append(w.bad, fmt.Sprintf("%s arrived in %s, mode %v: not writable by its owner", name, dir, fi.Mode().Perm()))
		}
		w.mu.Unlock()
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
	// A rerun: the last copy left top/ro read-only.
	os.MkdirAll(filepath.Join(dst, "top/ro"), 0o755)
	os.Chmod(filepath.Join(dst, "top/ro"), 0o555)

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

// cutConn fails its writes, and closes, once n runs out.
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

// cutAtFileStart returns c as a cutConn that breaks once the session
// begins its nth file (0: at once), and the Events that break it, which
// pass every event on to events.
func cutAtFileStart(c net.Conn, n int, events func(kermit.Event)) (*cutConn, func(kermit.Event)) {
	cut := &cutConn{Conn: c}
	if n == 0 {
		return cut, events
	}
	cut.n.Store(1 << 30)
	began := 0
	return cut, func(e kermit.Event) {
		if e.Kind == kermit.FileStart {
			if began++; began == n {
				cut.n.Store(0)
			}
		}
		events(e)
	}
}

// A session that fails does not stop the others: they send every file
// it did not take. One that failed before it took a file is passed over;
// the files under way of one that failed later are sent again by one
// that finished, resuming, and each file is reported once.
func TestSendParallelSessionFails(t *testing.T) {
	for _, tc := range []struct {
		name        string
		early, dirs bool
	}{{"before its first file", true, false}, {"making directories", true, true}, {"with files under way", false, false}} {
		early := tc.early
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			var out []kermit.OutgoingFile
			when := time.Date(2019, 1, 2, 3, 4, 5, 0, time.UTC)
			if tc.dirs {
				for _, d := range []string{"d0", "d1", "d2"} {
					out = append(out, kermit.OutgoingFile{Name: d, Dir: true, Filled: true, Mode: 0o750, ModeKnown: true, ModTime: when})
				}
			}
			for j := 0; j < 60; j++ {
				p := filepath.Join(src, fmt.Sprint(j))
				os.WriteFile(p, randomBytes(20000, int64(j)), 0o644)
				fi, _ := os.Stat(p)
				name := fmt.Sprintf("f%d", j)
				if tc.dirs {
					name = fmt.Sprintf("d%d/f%d", j%3, j)
				}
				out = append(out, kermit.OutgoingFile{Name: name, Size: fi.Size(), ModTime: fi.ModTime(),
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
			var cutAt *cutConn
			senders, wait := sendClients(t, ctx, dst, 2, events, func(i int, a net.Conn, cfg *kermit.Config) net.Conn {
				if i != 1 {
					return a
				}
				// Session 1's link breaks: at once, or once it has
				// begun its second file.
				at := 2
				if early {
					at = 0
				}
				cutAt, cfg.Events = cutAtFileStart(a, at, events)
				return cutAt
			})
			err := kermit.SendParallel(ctx, senders, out)
			cancel()
			wait()
			if err != nil {
				t.Fatalf("error %v, want none: the others sent every file", err)
			}
			if cutAt.n.Load() >= 0 {
				t.Fatal("session 1's link was not cut: the test tested nothing")
			}
			done := 0
			for _, f := range out {
				if f.Dir {
					fi, err := os.Stat(filepath.Join(dst, f.Name))
					if err != nil || fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(when) {
						t.Errorf("directory %s: %v, %v", f.Name, fi, err)
					}
					continue
				}
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
			if done != len(out)-3*btoi(tc.dirs) {
				t.Errorf("%d of %d files done", done, len(out))
			}
		})
	}
}

// refusingShares is a server's files that refuse REMOTE SET, as a kerf
// from before shares does (it knows no such command).
type refusingShares struct{ *filestore.Dir }

func (refusingShares) Login(string, string) error { return nil }
func (refusingShares) Authorized(cmd string) error {
	if cmd == "GS" {
		return errors.New("unimplemented generic command 'S'")
	}
	return nil
}

// A GET over several sessions fetches each file once, spread over the
// sessions; directories arrive with their own permissions and times,
// given once all sessions are done. A server that knows no shares gets
// the whole GET on one session.
func TestGetParallel(t *testing.T) {
	root := t.TempDir()
	when := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	dirs := []struct {
		name string
		mode os.FileMode
	}{{"tree", 0o750}, {"tree/a", 0o700}, {"tree/b", 0o555}, {"tree/a/deep", 0o711}}
	var names []string
	for _, d := range dirs {
		os.MkdirAll(filepath.Join(root, d.name), 0o755)
		for j := 0; j < 25; j++ {
			name := filepath.Join(d.name, fmt.Sprintf("f%d", j))
			os.WriteFile(filepath.Join(root, name), randomBytes(100*j+len(d.name), int64(j)), 0o640)
			names = append(names, name)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(root, dirs[i].name)
		os.Chmod(p, dirs[i].mode)
		os.Chtimes(p, when, when.Add(time.Duration(i)*time.Hour))
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "tree/b"), 0o755) })
	for _, refuse := range []bool{false, true} {
		name := "shares"
		if refuse {
			name = "server without shares"
		}
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			t.Cleanup(func() { os.Chmod(filepath.Join(dst, "tree/b"), 0o755) })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var clients []*kermit.Session
			var stores []kermit.Store
			var got [3]fileEndings
			calls := &callCount{}
			for i := range got {
				ccfg := kermit.DefaultConfig()
				ccfg.Events = got[i].note
				cli, srv := dualSessions(t, ccfg, kermit.DefaultConfig(), nil)
				dir, err := filestore.Open(root)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dir.Close() })
				var fsys kermit.ServerFS = dir
				if refuse {
					fsys = refusingShares{dir}
				}
				go srv.Serve(ctx, fsys)
				store, err := filestore.Open(dst)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { store.Close() })
				clients, stores = append(clients, cli), append(stores, &countingDirAttrs{Dir: store, calls: calls})
			}
			if err := kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true}, stores); err != nil {
				t.Fatal(err)
			}
			for _, d := range dirs {
				// Given once, at the end, not by each session as its
				// group ends (a read-only one would refuse the files of
				// the sessions still going, to a user who is not root).
				if n := calls.n(d.name); n != 1 {
					t.Errorf("%s: attributes given %d times, want 1", d.name, n)
				}
			}
			for _, n := range names {
				want, _ := os.ReadFile(filepath.Join(root, n))
				if b, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(b) != string(want) {
					t.Errorf("%s: %d bytes, %v; want %d", n, len(b), err, len(want))
				}
				count := 0
				for i := range got {
					if got[i].of(n).Kind == kermit.FileDone {
						count++
					}
				}
				if count != 1 {
					t.Errorf("%s fetched %d times", n, count)
				}
			}
			for i := range got {
				if took := len(got[i].got); (took == 0) != (refuse && i > 0) {
					t.Errorf("session %d fetched %d files", i, took)
				}
			}
			for i, d := range dirs {
				fi, err := os.Stat(filepath.Join(dst, d.name))
				if err != nil {
					t.Fatal(err)
				}
				if want := when.Add(time.Duration(i) * time.Hour); fi.Mode().Perm() != d.mode || !fi.ModTime().Equal(want) {
					t.Errorf("%s: mode %v, time %v; want %v, %v", d.name, fi.Mode().Perm(), fi.ModTime().UTC(), d.mode, want)
				}
			}
		})
	}
}

// countingDirAttrs counts the SetDirAttrs calls of a store, by name.
type countingDirAttrs struct {
	*filestore.Dir
	calls *callCount
}

func (c *countingDirAttrs) SetDirAttrs(name string, perm os.FileMode, havePerm bool, mtime time.Time) error {
	c.calls.add(name)
	return c.Dir.SetDirAttrs(name, perm, havePerm, mtime)
}

type callCount struct {
	mu sync.Mutex
	by map[string]int
}

func (c *callCount) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]int{}
	}
	c.by[name]++
}

func (c *callCount) n(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[name]
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A server in command wait on TCP passes over what is left of a transfer
// that ended (a dead client's packets) without answering; on a serial
// line it answers E, which may be the answer the sender lost, numbered
// as the packet it answers. A stray D is not ACKed (QA: it was, on both,
// and the serial E was numbered 0).
func TestServerStrayTransferPackets(t *testing.T) {
	for _, reliable := range []bool{true, false} {
		a, b := link(t, 0, 1)
		fsys, err := filestore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer fsys.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := kermit.DefaultConfig()
		cfg.Reliable = reliable
		srv := kermit.NewSession(b, cfg)
		defer srv.Close()
		go srv.Serve(ctx, fsys)
		f := framing.Frame{Mark: framing.SOH, Check: 1}
		var wire []byte
		for _, p := range []framing.Packet{{Seq: 17, Type: 'D', Data: []byte("data")}, {Seq: 5, Type: 'Z'}, {Seq: 7, Type: 'B'}, {Seq: 0, Type: 'I', Data: framing.DefaultParams().Marshal()}} {
			wire, _ = f.AppendPacket(wire, p)
			wire = append(wire, '\r')
		}
		a.Write(wire)
		var got []byte
		buf := make([]byte, 512)
		a.SetReadDeadline(time.Now().Add(10 * time.Second))
		for bytes.IndexByte(got, '\r') < 0 {
			n, err := a.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		p, _, err := f.ParsePacket(got[max(0, bytes.IndexByte(got, framing.SOH)):])
		want, seq := byte('E'), 17
		if reliable {
			want, seq = 'Y', 0 // the I's answer comes first
		}
		if err != nil || p.Type != want || p.Seq != seq {
			t.Errorf("reliable %v: first answer %q (%v), want %c numbered %d", reliable, got, err, want, seq)
		}
	}
}

// slowParent delays making one directory, and records the mode of the
// parent of another once that is made.
type slowParent struct {
	*filestore.Dir
	root, slow, watch string
	seen              chan os.FileMode
}

func (s *slowParent) MakeDir(name string, perm os.FileMode, havePerm bool) error {
	if name == s.slow {
		time.Sleep(200 * time.Millisecond)
	}
	err := s.Dir.MakeDir(name, perm, havePerm)
	if name == s.watch {
		fi, serr := os.Stat(filepath.Join(s.root, path.Dir(name)))
		if serr == nil {
			s.seen <- fi.Mode().Perm()
		}
	}
	return err
}

// A private directory stays private while a subdirectory of it is made
// on another session first: each session makes a directory's parents
// with their own modes before it.
func TestSendParallelParentKeepsItsMode(t *testing.T) {
	dst := t.TempDir()
	out := []kermit.OutgoingFile{
		{Name: "p", Dir: true, Filled: true, Mode: 0o700, ModeKnown: true},
		{Name: "p/c", Dir: true, Filled: true, Mode: 0o755, ModeKnown: true},
	}
	for j := 0; j < 8; j++ {
		src := filepath.Join(t.TempDir(), "f")
		os.WriteFile(src, []byte("x"), 0o644)
		fi, _ := os.Stat(src)
		out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("p/c/f%d", j), Size: 1, ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return os.Open(src) }})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen := make(chan os.FileMode, 4)
	var senders []*kermit.Session
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		send, recv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
		senders = append(senders, send)
		dir, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dir.Close() })
		store := &slowParent{Dir: dir, root: dst, watch: "p/c", seen: seen}
		if i == 0 {
			store.slow = "p"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for recv.Receive(ctx, store) == nil {
			}
		}()
	}
	if err := kermit.SendParallel(ctx, senders, out); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	close(seen)
	for m := range seen {
		if m&0o077 != 0 {
			t.Errorf("p was %v once p/c was made: more open than the sender's 0700", m)
		}
	}
}

// A session of a GET lost on the way leaves the rest of its share to one
// that finished: every file arrives, each reported done once (the lost
// session's own and the take-over's) and saved once (review: the
// take-over's FileSaved was swallowed), and the GET succeeds.
func TestGetParallelSessionLost(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	names := writeTree(t, root, 60, 150000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ended endLog
	var told doneSaved
	// Session 1's link breaks once it has begun its third file.
	clients, stores, cuts := getClients(t, ctx, root, dst, func(e kermit.Event) { ended.note(e); told.note(e) }, 0, 3)
	cut := cuts[1]
	if err := kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true}, stores); err != nil {
		t.Fatalf("GET with a session lost: %v, want the other to fetch its share", err)
	}
	if cut.n.Load() >= 0 {
		t.Fatal("session 1's link was not cut: the test tested nothing")
	}
	ended.fetchedOnce(t, root, dst, names)
	told.onceEach(t, names)
}

// A send to a kerf receiver tells each file saved once its group's B is
// acknowledged; a group that stops first tells each file it had told
// done as not confirmed saved (ErrNotSaved), so that none counts as
// there when it may not be.
func TestSentFilesSavedOrNot(t *testing.T) {
	src := t.TempDir()
	var out []kermit.OutgoingFile
	for j := range 40 {
		p := filepath.Join(src, fmt.Sprint(j))
		os.WriteFile(p, randomBytes(30000, int64(j)), 0o644)
		fi, _ := os.Stat(p)
		out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("f%02d", j), Size: fi.Size(), ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	for _, cutAfter := range []int{0, 5} {
		t.Run(fmt.Sprintf("cut after %d", cutAfter), func(t *testing.T) {
			dst := t.TempDir()
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			var mu sync.Mutex
			kinds := map[string][]kermit.EventKind{}
			notSaved := 0
			a, b := link(t, 0, 1)
			cut := &cutConn{Conn: a}
			cut.n.Store(1 << 30)
			scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
			done := 0
			scfg.Events = func(e kermit.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind == kermit.FileProgress || e.Kind == kermit.FileStart {
					return
				}
				kinds[e.Name] = append(kinds[e.Name], e.Kind)
				if errors.Is(e.Err, kermit.ErrNotSaved) {
					notSaved++
				}
				if e.Kind == kermit.FileDone {
					if done++; done == cutAfter {
						cut.n.Store(0)
					}
				}
			}
			da, db := dualPair(t)
			scfg.Dual, rcfg.Dual = da, db
			scfg.Streaming, rcfg.Streaming = true, true
			send, recv := kermit.NewSession(cut, scfg), kermit.NewSession(b, rcfg)
			t.Cleanup(func() { send.Close(); recv.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			received := make(chan struct{})
			go func() { recv.Receive(ctx, store); close(received) }()
			// The receiver is done with the store before it closes.
			defer func() { cancel(); send.Close(); recv.Close(); <-received }()
			err = send.Send(ctx, out)
			mu.Lock()
			defer mu.Unlock()
			if cutAfter == 0 {
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range out {
					if k := kinds[f.Name]; !slices.Equal(k, []kermit.EventKind{kermit.FileDone, kermit.FileSaved}) {
						t.Errorf("%s: events %v, want done then saved", f.Name, k)
					}
				}
				return
			}
			if err == nil {
				t.Fatal("the cut send succeeded")
			}
			if notSaved < cutAfter {
				t.Errorf("%d files told not confirmed saved, want at least the %d told done", notSaved, cutAfter)
			}
			for name, k := range kinds {
				if slices.Contains(k, kermit.FileSaved) {
					t.Errorf("%s told saved in a group that stopped: %v", name, k)
				}
			}
		})
	}
}

// A GET over three sessions where one is lost and then the one that took
// its share over is lost too: the third takes the share over, and every
// file arrives, each reported done once.
func TestGetParallelTakeOverLostToo(t *testing.T) {
	// Parts saved (savedEvery 2) are forgotten by the tracker: the
	// second take-over knows what the first told by its place in the
	// share (how far the first got), not by name.
	for _, savedEvery := range []int{0, 2} {
		t.Run(fmt.Sprint("saved every ", savedEvery), func(t *testing.T) {
			if savedEvery > 0 {
				defer kermit.SetSavedEvery(savedEvery)()
			}
			root, dst := t.TempDir(), t.TempDir()
			os.MkdirAll(filepath.Join(root, "tree"), 0o755)
			var names []string
			own := 0 // files of session 0's own share
			for j := range 60 {
				name := fmt.Sprintf("tree/f%02d", j)
				os.WriteFile(filepath.Join(root, name), randomBytes(100000+j, int64(j)), 0o644)
				names = append(names, name)
				if kermit.InShare(name, 0, 3) {
					own++
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var ended endLog
			var told doneSaved
			// Session 2 is lost at its third file; session 0, the first
			// to take share 2 over (good[2 % 2]), in it.
			clients, stores, cuts := getClients(t, ctx, root, dst, func(e kermit.Event) { ended.note(e); told.note(e) }, own+2, 0, 3)
			err := kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true}, stores)
			if cuts[2].n.Load() >= 0 || cuts[0].n.Load() >= 0 {
				t.Fatal("the links were not both cut: the test tested nothing")
			}
			if err != nil {
				t.Fatalf("GET with a session lost, and its stand-in lost too: %v", err)
			}
			ended.fetchedOnce(t, root, dst, names)
			told.onceEach(t, names)
		})
	}
}

// getClients starts len(cutAt) client sessions for a GET, each with a
// kerf server session of its own on root and a store of its own on dst,
// every event going to events; cutAt[i] > 0 breaks session i's link
// once it has begun its cutAt[i]th file. It returns the clients, their
// stores, and the breakable links (nil where cutAt[i] is 0).
func getClients(t *testing.T, ctx context.Context, root, dst string, events func(kermit.Event), cutAt ...int) ([]*kermit.Session, []kermit.Store, []*cutConn) {
	t.Helper()
	var clients []*kermit.Session
	var stores []kermit.Store
	cuts := make([]*cutConn, len(cutAt))
	for i, at := range cutAt {
		ccfg, scfg := kermit.DefaultConfig(), kermit.DefaultConfig()
		ccfg.Events = events
		a, b := link(t, 0, 1)
		if at > 0 {
			cuts[i], ccfg.Events = cutAtFileStart(a, at, events)
			a = cuts[i]
		}
		da, db := dualPair(t)
		ccfg.Dual, scfg.Dual = da, db
		ccfg.Streaming, scfg.Streaming = true, true
		cli, srv := kermit.NewSession(a, ccfg), kermit.NewSession(b, scfg)
		t.Cleanup(func() { cli.Close(); srv.Close() })
		dir, err := filestore.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dir.Close() })
		go srv.Serve(ctx, dir)
		store, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		clients, stores = append(clients, cli), append(stores, store)
	}
	return clients, stores, cuts
}

// sendClients starts n sender sessions for a SendParallel, each to a
// receiving session of its own that stores into dst until its link
// ends, every event going to events; wrap, if set, may replace session
// i's link and its Config (Events). wait waits for the receivers.
func sendClients(t *testing.T, ctx context.Context, dst string, n int, events func(kermit.Event), wrap func(i int, a net.Conn, cfg *kermit.Config) net.Conn) (senders []*kermit.Session, wait func()) {
	t.Helper()
	return sendClientsWith(t, ctx, dst, n, events, wrap, nil)
}

// sendClientsWith is sendClients with both sides' Configs of each pair
// given to both, if set, first.
func sendClientsWith(t *testing.T, ctx context.Context, dst string, n int, events func(kermit.Event), wrap func(i int, a net.Conn, cfg *kermit.Config) net.Conn, both func(scfg, rcfg *kermit.Config)) (senders []*kermit.Session, wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
		scfg.Events = events
		a, b := link(t, 0, 1)
		scfg.Dual, rcfg.Dual = dualPair(t)
		scfg.Streaming, rcfg.Streaming = true, true
		if both != nil {
			both(&scfg, &rcfg)
		}
		if wrap != nil {
			a = wrap(i, a, &scfg)
		}
		send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
		t.Cleanup(func() { send.Close(); recv.Close() })
		senders = append(senders, send)
		store, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		wg.Go(func() {
			for recv.Receive(ctx, store) == nil {
			}
		})
	}
	return senders, wg.Wait
}

// endLog records how each file of a transfer ended (done, failed,
// skipped), every time it was told.
type endLog struct {
	mu    sync.Mutex
	ended map[string][]kermit.EventKind
	errs  map[string]error // the last FileFailed's
}

func (l *endLog) note(e kermit.Event) {
	if e.Kind != kermit.FileDone && e.Kind != kermit.FileFailed && e.Kind != kermit.FileSkipped {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended == nil {
		l.ended = map[string][]kermit.EventKind{}
	}
	l.ended[e.Name] = append(l.ended[e.Name], e.Kind)
	if e.Kind == kermit.FileFailed {
		if l.errs == nil {
			l.errs = map[string]error{}
		}
		l.errs[e.Name] = e.Err
	}
}

// fetchedOnce checks that each of names came from root to dst whole,
// and was told done once and nothing else.
func (l *endLog) fetchedOnce(t *testing.T, root, dst string, names []string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range names {
		want, _ := os.ReadFile(filepath.Join(root, n))
		if b, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(b) != string(want) {
			t.Errorf("%s: %d bytes, %v; want %d", n, len(b), err, len(want))
		}
		if k := l.ended[n]; len(k) != 1 || k[0] != kermit.FileDone {
			t.Errorf("%s ended %v, want done once", n, k)
		}
	}
}

// writeTree writes n files of about size bytes (size+j for the jth) as
// tree/f00, tree/f01, ... under root and returns their names.
func writeTree(t *testing.T, root string, n, size int) []string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	for j := range n {
		name := fmt.Sprintf("tree/f%02d", j)
		if err := os.WriteFile(filepath.Join(root, name), randomBytes(size+j, int64(j)), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}
