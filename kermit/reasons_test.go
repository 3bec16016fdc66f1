package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// eventLog collects a session's events (they may come from several
// goroutines).
type eventLog struct {
	mu     sync.Mutex
	events []kermit.Event
}

func (l *eventLog) add(e kermit.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// failures is the errors of the FileFailed events, in words.
func (l *eventLog) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if e.Kind == kermit.FileFailed {
			out = append(out, e.Err.Error())
		}
	}
	return out
}

// errOf returns the error of the first event of kind k for name.
func (l *eventLog) errOf(k kermit.EventKind, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Kind == k && e.Name == name {
			return e.Err
		}
	}
	return nil
}

// Between kerf peers, a refused file's sender learns why in words, and a
// file the sender cannot open is announced, so the receiver reports it as
// not received with the sender's reason; the other files still arrive.
// Both with the data on the packet stream and on a data path.
func TestRefusalAndUnsentReasons(t *testing.T) {
	for _, dual := range []bool{false, true} {
		t.Run(fmt.Sprintf("dual=%v", dual), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			good := []testFile{{"a.bin", randomBytes(5000, 1)}, {"b.bin", randomBytes(70_000, 2)}}
			out := writeFiles(t, src, good)
			refused := out[0]
			refused.Name = "../escape.bin"
			unreadable := kermit.OutgoingFile{Name: "locked.bin", Size: 10, Mode: 0o644,
				Open: func() (kermit.FileReader, error) {
					return nil, &fs.PathError{Op: "open", Path: "locked.bin", Err: errors.New("permission denied")}
				}}
			files := []kermit.OutgoingFile{refused, out[0], unreadable, out[1]}
			var sent, got eventLog
			scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
			scfg.Events, rcfg.Events = sent.add, got.add
			serr, rerr := transferEitherInto(t, dual, scfg, rcfg, files, dst)
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 2 || rerr != nil {
				t.Fatalf("send %v (want a group error naming two files), receive %v", serr, rerr)
			}
			checkFiles(t, dst, good)
			if err := sent.errOf(kermit.FileSkipped, "../escape.bin"); err == nil || !strings.Contains(err.Error(), "unsafe") {
				t.Errorf("sender's reason for the refused file: %v (want the receiver's words)", err)
			}
			if err := got.errOf(kermit.FileSkipped, "locked.bin"); err == nil || !strings.Contains(err.Error(), "permission denied") {
				t.Errorf("receiver's reason for the unsent file: %v (want the sender's open error)", err)
			}
		})
	}
}

// failingStore's files take limit bytes (none, by default), then fail
// every write with a long message whose cause is at the end, as a full
// disk's is.
type failingStore struct {
	*filestore.Dir
	limit int64
}

func (s failingStore) Create(name string) (kermit.Incoming, error) {
	in, err := s.Dir.Create(name)
	if err != nil {
		return nil, err
	}
	return failingIncoming{in, s.limit}, nil
}

type failingIncoming struct {
	kermit.Incoming
	limit int64
}

func (f failingIncoming) WriteAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) <= f.limit {
		return f.Incoming.WriteAt(b, off)
	}
	return 0, errors.New("write some/rather/deep/directory/tree/with/a/long/file/name.bin: no space left on device")
}

// The receiver's fatal error reaches the sender whole, not cut at 80
// characters before its cause.
func TestErrorPacketKeepsCause(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := writeFiles(t, src, []testFile{{"x.bin", randomBytes(20_000, 3)}})
	a, b := link(t, 0, 1)
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recv := kermit.NewSession(b, kermit.DefaultConfig())
	defer recv.Close()
	send := kermit.NewSession(a, kermit.DefaultConfig())
	defer send.Close()
	rerr := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { rerr <- recv.Receive(ctx, failingStore{Dir: store}) }()
	var said error
	send.SetEvents(func(e kermit.Event) {
		if e.Kind == kermit.FileFailed {
			said = e.Err
		}
	})
	serr := send.Send(ctx, files)
	<-rerr
	// (The file fails alone: its Z's answer says why.)
	const cause = "write some/rather/deep/directory/tree/with/a/long/file/name.bin: no space left on device"
	if serr == nil || said == nil || !strings.Contains(said.Error(), cause) {
		t.Fatalf("sender got %v, told %v; want the receiver's whole reason", serr, said)
	}
}

// lockedFS serves a tree in which "locked.bin" cannot be opened, as a
// file the server has no permission to read.
type lockedFS struct{ *filestore.Dir }

func (l lockedFS) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	files, err := l.Dir.Match(spec, recursive)
	for i, f := range files {
		if f.Name == "locked.bin" {
			files[i].Open = func() (kermit.FileReader, error) {
				return nil, &fs.PathError{Op: "openat", Path: "locked.bin", Err: errors.New("permission denied")}
			}
		}
	}
	return files, err
}

// A GET that cannot send one of its files completes the others, tells the
// client which file it did not send and why, and leaves the session in
// step: the next command works (no stray E after the group's B).
func TestServerGetWithUnreadableFileStaysInStep(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	files := []testFile{{"a.bin", randomBytes(3000, 1)}, {"locked.bin", []byte("secret")}, {"z.bin", randomBytes(9000, 2)}}
	writeFiles(t, root, files)
	a, b := link(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fsys, _ := filestore.Open(root)
	defer fsys.Close()
	srv := kermit.NewSession(b, kermit.DefaultConfig())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lockedFS{fsys}) }()
	var got eventLog
	cfg := kermit.DefaultConfig()
	cfg.Events = got.add
	cli := kermit.NewSession(a, cfg)
	store, _ := filestore.Open(dst)
	defer store.Close()
	if err := cli.Get(ctx, "*.bin", false, store); err != nil {
		t.Fatalf("get: %v", err)
	}
	checkFiles(t, dst, []testFile{files[0], files[2]})
	if err := got.errOf(kermit.FileSkipped, "locked.bin"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("client's report of the unsent file: %v", err)
	}
	os.Remove(filepath.Join(dst, "a.bin"))
	if err := cli.Get(ctx, "a.bin", false, store); err != nil {
		t.Fatalf("the next command after it: %v", err)
	}
	checkFiles(t, dst, []testFile{files[0]})
	if err := cli.Finish(ctx); err != nil {
		t.Errorf("finish: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("server: %v", err)
	}
}

// A long refusal reaches the sender whole, in several "m" fields: it
// was cut at 94 bytes, before its hint.
func TestLongRefusalArrivesWhole(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	deep := "a-rather-deep/directory-tree/with-long-names-in-it/for-a-reason"
	out := writeFiles(t, src, []testFile{{"x.bin", randomBytes(5000, 1)}})
	out[0].Name = deep + "/x.bin"
	if err := os.MkdirAll(filepath.Join(dst, deep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nowhere", filepath.Join(dst, deep, ".x.bin.kerf-part")); err != nil {
		t.Fatal(err)
	}
	var sent eventLog
	scfg := kermit.DefaultConfig()
	scfg.Events = sent.add
	transferEitherInto(t, true, scfg, kermit.DefaultConfig(), out, dst)
	err := sent.errOf(kermit.FileSkipped, out[0].Name)
	if err == nil || !strings.Contains(err.Error(), "remove it to receive the file") || !strings.Contains(err.Error(), deep) {
		t.Fatalf("sender's reason: %v; want the receiver's whole text", err)
	}
}
