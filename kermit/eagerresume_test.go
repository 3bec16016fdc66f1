package kermit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// gateStore holds the receiver's first Create until the sender has begun
// the second file, which a sender waiting for each file's verdict never
// does before that Create returns.
type gateStore struct {
	*filestore.Dir
	once   sync.Once
	second chan struct{}
	waited chan bool
}

func (g *gateStore) Create(name string) (kermit.Incoming, error) {
	g.once.Do(func() {
		select {
		case <-g.second:
			g.waited <- false
		case <-time.After(10 * time.Second):
			g.waited <- true
		}
	})
	return g.Dir.Create(name)
}

// With --resume, small files go whole at once between kerf peers, asking
// only to be skipped if already there: no round trip per file. A file
// there whole is skipped, a small one's partial is replaced, and a big
// file still resumes from its partial.
func TestResumeSendsSmallFilesWithoutWaiting(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := []testFile{
		{"there.txt", randomBytes(3000, 1)},
		{"partial.txt", randomBytes(5000, 2)},
		{"new.txt", randomBytes(7000, 3)},
		{"big.bin", randomBytes(3<<20, 4)},
	}
	out := writeFiles(t, src, files)
	os.WriteFile(filepath.Join(dst, "there.txt"), files[0].data, 0o644)
	os.Chtimes(filepath.Join(dst, "there.txt"), out[0].ModTime, out[0].ModTime)
	os.WriteFile(filepath.Join(dst, ".partial.txt"+filestore.PartSuffix), randomBytes(2000, 9), 0o600)
	os.WriteFile(filepath.Join(dst, ".big.bin"+filestore.PartSuffix), files[3].data[:1<<20], 0o600)

	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	store := &gateStore{Dir: dir, second: make(chan struct{}), waited: make(chan bool, 1)}
	var began sync.Once
	var got fileEndings
	scfg := kermit.DefaultConfig()
	scfg.Resume = true
	scfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileStart && e.Name == "partial.txt" {
			began.Do(func() { close(store.second) })
		}
		got.note(e)
	}
	send, recv := dualSessions(t, scfg, kermit.DefaultConfig(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, store) }()
	serr := send.Send(ctx, out)
	if rerr := <-rerr; serr != nil || rerr != nil {
		t.Fatalf("send %v, receive %v", serr, rerr)
	}
	if <-store.waited {
		t.Error("the sender waited for the first file's verdict before it began the second")
	}
	checkFiles(t, dst, files)
	if e := got.of("there.txt"); e.Kind != kermit.FileSkipped || !errors.Is(e.Err, kermit.ErrAlreadyThere) {
		t.Errorf("there.txt: %+v; want skipped, already there", e)
	}
	for _, n := range []string{"partial.txt", "new.txt"} {
		if e := got.of(n); e.Kind != kermit.FileDone || e.Offset != 0 {
			t.Errorf("%s: %+v; want done from 0", n, e)
		}
	}
	if e := got.of("big.bin"); e.Kind != kermit.FileDone || e.Offset != 1<<20 {
		t.Errorf("big.bin: %+v; want done from its partial's 1 MiB", e)
	}
}

// A kerf receiver from before the disposition '=' is asked for recovery
// of every file, as before, and so still skips those it has whole.
func TestResumeWithReceiverFromBeforeUnlessThere(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := []testFile{{"there.txt", randomBytes(3000, 1)}, {"new.txt", randomBytes(7000, 3)}}
	out := writeFiles(t, src, files)
	os.WriteFile(filepath.Join(dst, "there.txt"), files[0].data, 0o644)
	os.Chtimes(filepath.Join(dst, "there.txt"), out[0].ModTime, out[0].ModTime)
	var got fileEndings
	scfg := kermit.DefaultConfig()
	scfg.Resume = true
	scfg.Events = got.note
	_, serr, rerr := dualTransfer(t, scfg, kermit.WithoutUnlessThere(kermit.DefaultConfig()), out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send %v, receive %v", serr, rerr)
	}
	checkFiles(t, dst, files)
	if e := got.of("there.txt"); e.Kind != kermit.FileSkipped || !errors.Is(e.Err, kermit.ErrAlreadyThere) {
		t.Errorf("there.txt: %+v; want skipped, already there", e)
	}
	if e := got.of("new.txt"); e.Kind != kermit.FileDone {
		t.Errorf("new.txt: %+v; want done", e)
	}
}

// fileEndings keeps each file's ending event (done, skipped or failed),
// from events of any goroutine.
type fileEndings struct {
	mu  sync.Mutex
	got map[string]kermit.Event
}

func (f *fileEndings) note(e kermit.Event) {
	if e.Kind != kermit.FileDone && e.Kind != kermit.FileSkipped && e.Kind != kermit.FileFailed {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.got == nil {
		f.got = map[string]kermit.Event{}
	}
	f.got[e.Name] = e
}

func (f *fileEndings) of(name string) kermit.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[name]
}
