package kermit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"kerf/datachan"
	"kerf/filestore"
	"kerf/kermit"
)

// failingFile is a received file whose writes fail with ENOSPC from
// offset failAt on (writeErr), or whose Commit fails (commitErr).
type failingFile struct {
	kermit.Incoming
	failAt    int64
	commitErr bool
}

func (f failingFile) WriteAt(b []byte, off int64) (int, error) {
	if f.failAt >= 0 && off+int64(len(b)) > f.failAt {
		return 0, syscall.ENOSPC
	}
	return f.Incoming.WriteAt(b, off)
}

func (f failingFile) Commit(mod time.Time, perm os.FileMode) error {
	if f.commitErr {
		f.Incoming.Abort(true)
		return errors.New("rename: permission denied")
	}
	return f.Incoming.Commit(mod, perm)
}

// failStore fails the file named bad, as how says.
func failStore(t *testing.T, dst, bad string, how failingFile) kermit.Store {
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return wrapStore{dir, func(in kermit.Incoming) kermit.Incoming {
		if strings.HasSuffix(in.Name(), bad) {
			how.Incoming = in
			return how
		}
		return in
	}}
}

// failureOf makes cfg's Events keep the error a FileFailed of name
// says; the function returns it.
func failureOf(cfg *kermit.Config, name string) func() string {
	var mu sync.Mutex
	var said string
	cfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileFailed && e.Name == name {
			mu.Lock()
			said = e.Err.Error()
			mu.Unlock()
		}
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return said
	}
}

// A file the receiver cannot store (its disk filled mid-file, its
// rename failed) fails alone between kerf peers (capas2NotStored): the
// sender hears why in the Z's ACK and names it, the files after it
// still arrive, and the session goes on. Before, it ended the session.
func TestFileNotStoredFailsAlone(t *testing.T) {
	files := []testFile{{"a.bin", randomBytes(300_000, 1)}, {"b.bin", randomBytes(3<<20, 2)}, {"c.bin", randomBytes(5000, 3)}}
	for _, tc := range []struct {
		name string
		dual bool
		how  failingFile
		want string
	}{
		{"dual, disk full mid-file", true, failingFile{failAt: 1 << 20}, "no space left"},
		{"dual, rename fails", true, failingFile{failAt: -1, commitErr: true}, "rename: permission denied"},
		{"classic, rename fails", false, failingFile{failAt: -1, commitErr: true}, "rename: permission denied"},
		// In D packets (--in-band, a line) too: the file is canceled
		// and the rest goes on (QA ar: the transfer ended).
		{"classic, disk full mid-file", false, failingFile{failAt: 1 << 20}, "no space left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, files)
			store := failStore(t, dst, "b.bin", tc.how)
			scfg := kermit.DefaultConfig()
			said := failureOf(&scfg, "b.bin")
			serr, rerr := transferEither(t, tc.dual, scfg, kermit.DefaultConfig(), out, store)
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "b.bin" || rerr != nil {
				t.Fatalf("send %v (want a group error naming only b.bin), receive %v", serr, rerr)
			}
			if said := said(); !strings.Contains(said, "not stored by the receiver") || !strings.Contains(said, tc.want) {
				t.Errorf("the sender was told %q, want the receiver's reason (%q)", said, tc.want)
			}
			for _, f := range []testFile{files[0], files[2]} {
				if got, err := os.ReadFile(filepath.Join(dst, f.name)); err != nil || !bytes.Equal(got, f.data) {
					t.Errorf("%s: %v", f.name, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dst, "b.bin")); err == nil {
				t.Error("b.bin stored under its name")
			}
			// Its partial stays, for a resume once there is room.
			if _, err := os.Stat(filepath.Join(dst, ".b.bin"+filestore.PartSuffix)); err != nil {
				t.Errorf("b.bin's partial: %v", err)
			}
		})
	}
}

// A send that stops part-way reports every file: those under way with
// the transfer's error, those not begun with ErrNotBegun, so that none
// goes unnamed (the CLI's --json gives each a file_error); one told
// done, whose saving the receiver had not confirmed, is told that too
// (ErrNotSaved).
func TestSendStoppedNamesEveryFile(t *testing.T) {
	files := []testFile{{"a.bin", randomBytes(1000, 1)}, {"b.bin", randomBytes(2000, 2)}, {"c.bin", randomBytes(3000, 3)}, {"d.bin", randomBytes(4000, 4)}}
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	a, b := link(t, 0, 1)
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// The receiver's link goes when the second file is announced.
	store := closingStore(dir, "b.bin", b)
	var ends endErrs
	scfg := kermit.DefaultConfig()
	scfg.Timeout, scfg.MaxRetries = 200*time.Millisecond, 2
	scfg.Events = ends.note
	serr, _, _ := transferTo(t, a, b, scfg, kermit.DefaultConfig(), out, store)
	if serr == nil {
		t.Fatal("the send succeeded over a closed link")
	}
	ends.mu.Lock()
	defer ends.mu.Unlock()
	told := ends.m
	if a := told["a.bin"]; len(a) != 2 || a[0] != nil || !errors.Is(a[1], kermit.ErrNotSaved) {
		t.Errorf("a.bin reported %v, want done, then not confirmed saved", a)
	}
	for _, f := range files[1:] {
		if len(told[f.name]) != 1 {
			t.Errorf("%s reported %d times: %v", f.name, len(told[f.name]), told[f.name])
		}
	}
	for _, n := range []string{"c.bin", "d.bin"} {
		if len(told[n]) == 1 && !errors.Is(told[n][0], kermit.ErrNotBegun) {
			t.Errorf("%s: %v, want ErrNotBegun", n, told[n][0])
		}
	}
}

// endErrs records, by name, the error of each FileDone (nil) and
// FileFailed event.
type endErrs struct {
	mu sync.Mutex
	m  map[string][]error
}

func (l *endErrs) note(e kermit.Event) {
	if e.Kind != kermit.FileDone && e.Kind != kermit.FileFailed {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string][]error{}
	}
	l.m[e.Name] = append(l.m[e.Name], e.Err)
}

// closingStore is dir, which closes the link c when it is asked for a
// file whose name ends in suffix: the link goes at that file's F.
func closingStore(dir *filestore.Dir, suffix string, c net.Conn) wrapStore {
	return wrapStore{dir, func(in kermit.Incoming) kermit.Incoming {
		if strings.HasSuffix(in.Name(), suffix) {
			c.Close()
		}
		return in
	}}
}

// changingReader serves data on the first read of each offset and
// changed on later ones: a file written to after the sender's last check
// of it, whose block is then read again for a resend.
type changingReader struct {
	mu            sync.Mutex
	data, changed []byte
	seen          map[int64]bool
	pos           int64
}

func (r *changingReader) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	src := r.data
	if r.seen[off] {
		src = r.changed
	}
	r.seen[off] = true
	if off >= int64(len(src)) {
		return 0, io.EOF
	}
	n := copy(p, src[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *changingReader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

func (r *changingReader) Close() error { return nil }

// A file whose whole-file check fails at the receiver (it changed after
// the sender's last look at it, and a damaged block's resend read the
// new bytes: each block checks, the whole does not) fails alone between
// kerf peers; before, the receiver ended the session, and with it the
// files after it (QA: one file written to during a send over a slow
// link lost the other twenty).
// Cut short instead, its block goes again padded (datachan's resend),
// to the same end; before, the receiver waited for that block until the
// data path failed, 20 s later, and the session with it.
func TestWholeFileMismatchFailsAlone(t *testing.T) {
	data := randomBytes(300_000, 4)
	for _, tc := range []struct {
		name    string
		changed []byte
		why     []string // what the sender may be told, one of
	}{
		{"written to", randomBytes(300_000, 5), []string{"CRC-32C mismatch"}},
		// The short re-read also dooms the file at the sender: whichever
		// end sees it first says so (seen both ways, about 1 run in 20
		// the sender's own).
		{"cut short", data[:150_000], []string{"CRC-32C mismatch", "read again came short"}},
	} {
		t.Run(tc.name, func(t *testing.T) { wholeFileMismatchFailsAlone(t, data, tc.changed, tc.why) })
	}
}

func wholeFileMismatchFailsAlone(t *testing.T, data, changed []byte, why []string) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"b.bin", data}, {"c.bin", randomBytes(5000, 3)}})
	out[0].Open = func() (kermit.FileReader, error) {
		return &changingReader{data: data, changed: changed, seen: map[int64]bool{}}, nil
	}
	scfg := kermit.DefaultConfig()
	said := failureOf(&scfg, "b.bin")
	// A bit flipped in b.bin's first payload: it is asked for again.
	send, recv := dualSessions(t, scfg, kermit.DefaultConfig(), func(c net.Conn) net.Conn { return &flipConn{Conn: c, at: 1000} })
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, store) }()
	serr := send.Send(ctx, out)
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "b.bin" {
		t.Fatalf("send: %v; want a group error naming only b.bin", serr)
	}
	if err := <-rerr; err != nil {
		t.Fatalf("receive: %v", err)
	}
	if said := said(); !slices.ContainsFunc(why, func(w string) bool { return strings.Contains(said, w) }) {
		t.Errorf("the sender was told %q, want one of %q", said, why)
	}
	checkFiles(t, dst, []testFile{{"c.bin", randomBytes(5000, 3)}})
}

// In band (streaming, answers not waited for), a receiver whose disk
// fills mid-transfer: no file the sender says done or saved is missing
// there (review 58: a receiver's cancels, one for each D packet of the
// failed file, came under numbers the sender had used since, and took
// later files' Z for answered: files told saved were not there, and
// --remove-source-files would have removed them).
func TestInBandDiskFullNoFalseDone(t *testing.T) {
	var files []testFile
	for i := range 120 {
		files = append(files, testFile{fmt.Sprintf("f%03d.bin", i), randomBytes(20_000+i*997, int64(i))})
	}
	files[29] = testFile{"f029.bin", randomBytes(3<<20, 99)} // the disk fills in it
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	var fmu sync.Mutex
	full := false
	store := wrapStore{openStore(t, dst), func(in kermit.Incoming) kermit.Incoming {
		fmu.Lock()
		defer fmu.Unlock()
		if filepath.Base(in.Name()) == "f029.bin" {
			full = true
			return failingFile{Incoming: in, failAt: 1 << 20}
		}
		if full {
			return failingFile{Incoming: in, failAt: 0}
		}
		return in
	}}
	var mu sync.Mutex
	done := map[string]kermit.EventKind{}
	inBandPair(t, out, store, func(e kermit.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == kermit.FileDone || e.Kind == kermit.FileSaved {
			done[e.Name] = e.Kind
		}
	}, nil, false)
	mu.Lock()
	defer mu.Unlock()
	if len(done) < 20 {
		t.Fatalf("%d files told done: the test tested little", len(done))
	}
	for name, k := range done {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
			t.Errorf("%s: the sender said %v, the receiver has not got it: %v", name, k, err)
		}
	}
}

// In band with answers not waited for, a file the receiver cannot write
// fails alone, for its reason, and the files after it arrive (review
// 58: its cancel, come late, canceled the next file instead).
func TestInBandWriteFailureCancelsNoOtherFile(t *testing.T) {
	files := []testFile{{"a.bin", randomBytes(5000, 1)}, {"b.bin", randomBytes(200_000, 2)}, {"c.bin", randomBytes(200_000, 3)}, {"d.bin", randomBytes(200_000, 4)}}
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	store := failStore(t, dst, "b.bin", failingFile{failAt: 199_000})
	var mu sync.Mutex
	ended := map[string]string{}
	err := inBandPair(t, out, store, func(e kermit.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case kermit.FileDone:
			ended[e.Name] = "done"
		case kermit.FileFailed, kermit.FileSkipped:
			ended[e.Name] = e.Err.Error()
		}
	}, nil, false)
	var ge *kermit.GroupError
	if !errors.As(err, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "b.bin" {
		t.Fatalf("send: %v; want b.bin alone failed (ended %v)", err, ended)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(ended["b.bin"], "no space left") {
		t.Errorf("b.bin ended %q, want the receiver's reason", ended["b.bin"])
	}
	for _, f := range []testFile{files[0], files[2], files[3]} {
		if got, err := os.ReadFile(filepath.Join(dst, f.name)); err != nil || !bytes.Equal(got, f.data) {
			t.Errorf("%s: %d bytes, %v; want its %d (ended %v)", f.name, len(got), err, len(f.data), ended)
		}
	}
}

// A receiver whose disk fills mid-file stops its sender on the data path
// (datachan.WithStops): the rest of the file stays where it is, the
// sender names the receiver's reason, and the files after it arrive. QA
// ar F8: a 1 GiB file whose receiver filled its disk 200 MB in crossed
// whole, dropped. Without stops agreed, all of it crosses, as before.
func TestDiskFullStopsTheSender(t *testing.T) {
	chunk := randomBytes(1<<20, 7)
	files := []testFile{{"a.bin", randomBytes(300_000, 1)}, {"big.bin", bytes.Repeat(chunk, 64)}, {"c.bin", randomBytes(5000, 3)}}
	for _, stops := range []bool{true, false} {
		t.Run(fmt.Sprintf("stops=%v", stops), func(t *testing.T) {
			defer func(o []datachan.Option) { dualOpts = o }(dualOpts)
			dualOpts = []datachan.Option{datachan.WithStops(stops)}
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, files)
			store := failStore(t, dst, "big.bin", failingFile{failAt: 1 << 20})
			scfg := kermit.DefaultConfig()
			said := failureOf(&scfg, "big.bin")
			send, recv := dualSessions(t, scfg, kermit.DefaultConfig(), nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rerr := make(chan error, 1)
			go func() { rerr <- recv.Receive(ctx, store) }()
			serr := send.Send(ctx, out)
			var ge *kermit.GroupError
			if err := <-rerr; !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "big.bin" || err != nil {
				t.Fatalf("send %v (want a group error naming only big.bin), receive %v", serr, err)
			}
			if said := said(); !strings.Contains(said, "not stored by the receiver") || !strings.Contains(said, "no space left") {
				t.Errorf("the sender was told %q, want the receiver's reason", said)
			}
			for _, f := range []testFile{files[0], files[2]} {
				if got, err := os.ReadFile(filepath.Join(dst, f.name)); err != nil || !bytes.Equal(got, f.data) {
					t.Errorf("%s: %v", f.name, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dst, ".big.bin"+filestore.PartSuffix)); err != nil {
				t.Errorf("big.bin's partial, for a resume once there is room: %v", err)
			}
			sent := send.DataPath().(*datachan.Path).Stats().BytesSent
			switch {
			case stops && sent > 32<<20:
				t.Errorf("%d MiB of the 64 MiB file sent after its receiver failed it 1 MiB in", sent>>20)
			case !stops && sent < 64<<20:
				t.Errorf("%d MiB sent without stops; want the whole file", sent>>20)
			}
		})
	}
}
