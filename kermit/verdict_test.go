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

	"kerf/datachan"
	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// noRoomStore refuses, at the A packet, any file over limit bytes, as a
// receiver whose disk lacks the room does.
type noRoomStore struct {
	*filestore.Dir
	limit int64
}

type noRoomFile struct {
	kermit.Incoming
	limit int64
}

func (s noRoomStore) Create(name string) (kermit.Incoming, error) {
	inc, err := s.Dir.Create(name)
	if err != nil {
		return nil, err
	}
	return noRoomFile{inc, s.limit}, nil
}

func (f noRoomFile) Room(n int64) error {
	if n > f.limit {
		return fmt.Errorf("needs %d bytes, %d are free", n, f.limit)
	}
	return nil
}

// In dual-channel mode a big file waits for the receiver's verdict on
// its attributes before its data: one refused (no room) sends none of
// its bytes, where it used to cross the link whole to be thrown away. A
// small one still goes without waiting, and both are reported.
func TestRefusedBigFileSendsNoData(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := writeFiles(t, src, []testFile{{"big.bin", randomBytes(4<<20, 1)}, {"small.bin", randomBytes(3000, 2)}, {"ok.bin", randomBytes(2<<20, 3)}})
	var mu sync.Mutex
	moved := map[string]int64{}
	var got fileEndings
	scfg := kermit.WithVerdictSize(kermit.DefaultConfig(), 1<<20)
	scfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileProgress {
			mu.Lock()
			moved[e.Name] = max(moved[e.Name], e.Bytes)
			mu.Unlock()
		}
		got.note(e)
	}
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// big.bin is refused; small.bin too, but after its data went.
	limits := noRoomStore{dir, 2 << 20}
	_, serr, rerr := dualTransferTo(t, scfg, kermit.DefaultConfig(), []kermit.OutgoingFile{files[0], files[1], files[2]}, smallRefused{limits})
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 2 || rerr != nil {
		t.Fatalf("send %v (want big.bin and small.bin failed), receive %v", serr, rerr)
	}
	mu.Lock()
	defer mu.Unlock()
	if moved["big.bin"] != 0 {
		t.Errorf("%d bytes of the refused big file were sent", moved["big.bin"])
	}
	if moved["ok.bin"] != 2<<20 {
		t.Errorf("ok.bin: %d bytes sent, want all", moved["ok.bin"])
	}
	for _, n := range []string{"big.bin", "small.bin"} {
		if e := got.of(n); e.Kind != kermit.FileSkipped || e.Err == nil {
			t.Errorf("%s: %+v; want refused", n, e)
		}
	}
	checkFiles(t, dst, []testFile{{"ok.bin", randomBytes(2<<20, 3)}})
}

// A file under verdictSize does not wait for the answer to its A, but
// its data goes in chunks until that answer is read: refused (no room,
// a directory of its name there), it stops after the chunk under way
// rather than crossing whole to be thrown away (QA: a 15 MB file into a
// name taken by a directory took its full 3 s at 5 MB/s), and the files
// after it go as usual.
func TestRefusedPipelinedFileStopsEarly(t *testing.T) {
	eitherSendfile(t, func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		const size = 48 << 20
		files := writeFiles(t, src, []testFile{{"big.bin", randomBytes(size, 1)}, {"ok.bin", randomBytes(3<<20, 3)}})
		var mu sync.Mutex
		moved := map[string]int64{}
		scfg := kermit.DefaultConfig()
		scfg.Events = func(e kermit.Event) {
			if e.Kind == kermit.FileProgress {
				mu.Lock()
				moved[e.Name] = max(moved[e.Name], e.Bytes)
				mu.Unlock()
			}
		}
		dir, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		// The answer comes late, as from a receiver still busy with
		// the file before: one chunk goes all the same, no more.
		_, serr, rerr := dualTransferTo(t, scfg, kermit.DefaultConfig(), files, slowAnswer{noRoomStore{dir, 4 << 20}})
		var ge *kermit.GroupError
		if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "big.bin" || rerr != nil {
			t.Fatalf("send %v (want big.bin failed), receive %v", serr, rerr)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d of the refused file's bytes were read to be sent", moved["big.bin"])
		if moved["big.bin"] > 9<<20 {
			t.Errorf("%d of the refused file's %d bytes were read to be sent, want one chunk", moved["big.bin"], size)
		}
		checkFiles(t, dst, []testFile{{"ok.bin", randomBytes(3<<20, 3)}})
	})
}

// A refusal that comes while the chunk before the verdict is still
// going stops it there: on a slow link (here a slow disk: 500 ms a
// block, so that the refusal has seconds to come under load) the whole
// 8 MiB chunk would go first, about a minute at 1 Mbit/s (QA).
func TestRefusalStopsTheChunkUnderWay(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	const size = 24 << 20
	files := writeFiles(t, src, []testFile{{"big.bin", randomBytes(size, 1)}, {"ok.bin", randomBytes(100_000, 3)}})
	open := files[0].Open
	files[0].Open = func() (kermit.FileReader, error) {
		r, err := open()
		if err != nil {
			return nil, err
		}
		return slowReader{r}, nil
	}
	if read := sendRefusingBig(t, files, dst, 4<<20); read > 4<<20 {
		t.Errorf("%d of the refused file's bytes were read to be sent: the chunk went on after the refusal", read)
	}
}

// sendRefusingBig sends files (big.bin, refused for room over limit
// bytes, and ok.bin: randomBytes(100_000, 3)) into dst and returns how
// much of big.bin was read to be sent, as its progress events said.
func sendRefusingBig(t *testing.T, files []kermit.OutgoingFile, dst string, limit int64) int64 {
	t.Helper()
	var mu sync.Mutex
	var read int64
	scfg := kermit.DefaultConfig()
	scfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileProgress && e.Name == "big.bin" {
			mu.Lock()
			read = max(read, e.Bytes)
			mu.Unlock()
		}
	}
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	_, serr, rerr := dualTransferTo(t, scfg, kermit.DefaultConfig(), files, noRoomStore{dir, limit})
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "big.bin" || rerr != nil {
		t.Fatalf("send %v (want big.bin failed), receive %v", serr, rerr)
	}
	checkFiles(t, dst, []testFile{{"ok.bin", randomBytes(100_000, 3)}})
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d of the refused file's bytes were read to be sent", read)
	return read
}

// slowReader reads a block of a MiB in 500 ms, as a slow disk or link
// would send it.
type slowReader struct{ kermit.FileReader }

func (r slowReader) ReadAt(b []byte, off int64) (int, error) {
	if len(b) >= 1<<20 {
		time.Sleep(500 * time.Millisecond)
	}
	return r.FileReader.ReadAt(b, off)
}

// slowAnswer takes its time over big.bin's A.
type slowAnswer struct{ noRoomStore }

func (s slowAnswer) Create(name string) (kermit.Incoming, error) {
	if name == "big.bin" {
		time.Sleep(300 * time.Millisecond)
	}
	return s.noRoomStore.Create(name)
}

// smallRefused refuses small.bin for room too (a limit below its size),
// so that a refusal of a file that did not wait is seen as well.
type smallRefused struct{ noRoomStore }

func (s smallRefused) Create(name string) (kermit.Incoming, error) {
	if name == "small.bin" {
		inc, err := s.Dir.Create(name)
		if err != nil {
			return nil, err
		}
		return noRoomFile{inc, 100}, nil
	}
	return s.noRoomStore.Create(name)
}

// unreadableDirFS serves tree/ld as the walk does a directory it may
// not read: its entry, then a file of its name that cannot be opened.
type unreadableDirFS struct{ *filestore.Dir }

func (u unreadableDirFS) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	files, err := u.Dir.Match(spec, recursive)
	why := fmt.Errorf("open tree/ld: %w", fs.ErrPermission)
	return append(files,
		kermit.OutgoingFile{Name: "tree/ld", Dir: true, Mode: 0, ModeKnown: true, ModTime: time.Now()},
		kermit.OutgoingFile{Name: "tree/ld", Size: -1, Open: func() (kermit.FileReader, error) { return nil, why }}), err
}

// outsideLinkFS serves tree/lo as the walk does a link that leads out
// of the tree: a file of its name that cannot be opened, saying why.
type outsideLinkFS struct{ *filestore.Dir }

func (u outsideLinkFS) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	files, err := u.Dir.Match(spec, recursive)
	why := errors.New("refused: the path leads outside your directory")
	return append(files, kermit.OutgoingFile{Name: "tree/lo", Size: -1, Open: func() (kermit.FileReader, error) { return nil, why }}), err
}

// A file the server could not send is reported with the server's reason,
// once, not as the clash of names the client saw: a directory the
// server may not read (the client has just made it, where a "file" of
// its name came), and a link leading out of the server's tree where the
// client has a directory of that name from a copy before (QA: "exists
// and is not a regular file").
func TestUnsendableFileSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name, file, why string
		serve           func(*filestore.Dir) kermit.ServerFS
		there           string // made at the client first
	}{
		{"unreadable directory", "tree/ld", "permission denied", func(d *filestore.Dir) kermit.ServerFS { return unreadableDirFS{d} }, ""},
		{"link out over a directory", "tree/lo", "leads outside", func(d *filestore.Dir) kermit.ServerFS { return outsideLinkFS{d} }, "tree/lo/kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, "tree"), 0o755)
			os.WriteFile(filepath.Join(root, "tree/f"), []byte("f"), 0o644)
			dir, err := filestore.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			var got fileEndings
			var ends endErrs
			ccfg := kermit.DefaultConfig()
			ccfg.Events = func(e kermit.Event) { got.note(e); ends.note(e) }
			cli, srv := dualSessions(t, ccfg, kermit.DefaultConfig(), nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			go srv.Serve(ctx, tc.serve(dir))
			dst := t.TempDir()
			if tc.there != "" {
				os.MkdirAll(filepath.Join(dst, tc.there), 0o755)
			}
			st, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			cli.Get(ctx, "tree", true, st)
			e := got.of(tc.file)
			if e.Kind != kermit.FileFailed || e.Err == nil || !strings.Contains(e.Err.Error(), tc.why) {
				t.Errorf("%s: %+v; want failed, saying %s", tc.file, e, tc.why)
			}
			ends.mu.Lock()
			if n := len(ends.m[tc.file]); n != 1 {
				t.Errorf("%s reported %d times", tc.file, n)
			}
			ends.mu.Unlock()
			if e := got.of("tree/f"); e.Kind != kermit.FileDone {
				t.Errorf("tree/f: %+v; want done", e)
			}
		})
	}
}

// fifoFS serves tree/fifo as the walk does an entry that is no file.
type fifoFS struct{ *filestore.Dir }

func (u fifoFS) Match(spec string, recursive bool) ([]kermit.OutgoingFile, error) {
	files, err := u.Dir.Match(spec, recursive)
	return append(files, kermit.OutgoingFile{Name: "tree/fifo", Size: -1,
		Open: func() (kermit.FileReader, error) { return nil, kermit.PassedOver("a FIFO") }}), err
}

// An entry passed over is announced to a kerf client that takes such
// announcements, which reports it skipped; a kerf from before them hears
// nothing of it (it would count it failed), and neither GET fails.
func TestPassedOverAnnounced(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "tree"), 0o755)
	os.WriteFile(filepath.Join(root, "tree/f"), []byte("f"), 0o644)
	for _, old := range []bool{false, true} {
		dir, err := filestore.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		var got fileEndings
		ccfg := kermit.DefaultConfig()
		if old {
			ccfg = kermit.WithoutPassedOver(ccfg)
		}
		ccfg.Events = got.note
		cli, srv := dualSessions(t, ccfg, kermit.DefaultConfig(), nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go srv.Serve(ctx, fifoFS{dir})
		st, err := filestore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := cli.Get(ctx, "tree", true, st); err != nil {
			t.Errorf("old=%v: GET: %v", old, err)
		}
		e := got.of("tree/fifo")
		switch {
		case old && e.Kind != 0:
			t.Errorf("a kerf from before heard of the FIFO: %+v", e)
		case !old && (e.Kind != kermit.FileSkipped || !errors.Is(e.Err, kermit.ErrPassedOver)):
			t.Errorf("tree/fifo: %+v; want skipped, passed over", e)
		}
		if e := got.of("tree/f"); e.Kind != kermit.FileDone {
			t.Errorf("old=%v: tree/f: %+v", old, e)
		}
	}
}

// An E packet an earlier session left on a serial line, before any S, is
// passed over by a receiver, as C-Kermit's is: the transfer that follows
// arrives. (It ended the receive with that old error.)
func TestReceivePassesOverStaleError(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := []testFile{{"p.txt", randomBytes(1000, 5)}}
	out := writeFiles(t, src, files)
	a, b := link(t, 0, 1)
	f := framing.Frame{Mark: framing.SOH, Check: 1}
	stale, _ := f.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'E', Data: []byte("stale error")})
	a.Write(append(stale, '\r'))
	cfg := kermit.DefaultConfig()
	serr, rerr, _ := transfer(t, a, b, cfg, cfg, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send %v, receive %v", serr, rerr)
	}
	checkFiles(t, dst, files)
}

// An E passed over before any S, with no S after it, is named when the
// receiver gives up: it may have been the sender's reason (QA: the
// message was lost, and the failure blamed on speed or parity).
func TestReceiveGivingUpNamesTheErrorItPassedOver(t *testing.T) {
	a, b := link(t, 0, 1)
	f := framing.Frame{Mark: framing.SOH, Check: 1}
	e, _ := f.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'E', Data: []byte("disk full at the sender")})
	a.Write(append(e, '\r'))
	cfg := kermit.DefaultConfig()
	cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 100*time.Millisecond, 50*time.Millisecond, 2
	store, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = kermit.NewSession(b, cfg).Receive(ctx, store)
	if !errors.Is(err, kermit.ErrTooManyRetries) || !strings.Contains(err.Error(), "disk full at the sender") {
		t.Fatalf("receive: %v; want too many retries naming the error packet passed over", err)
	}
}

// On a path held to a rate (--limit-rate), what goes before a file's
// verdict is what the rate carries in about two round trips, not 8 MiB:
// a refused 6 MiB file at 256 KiB/s crossed whole (24 s), and a bigger
// one cost the block under way, seconds at such rates (QA).
func TestRateLimitedChunkBeforeVerdict(t *testing.T) {
	defer func(o []datachan.Option) { dualOpts = o }(dualOpts)
	dualOpts = []datachan.Option{datachan.WithRateLimit(datachan.NewLimiter(256 << 10))}
	src, dst := t.TempDir(), t.TempDir()
	files := writeFiles(t, src, []testFile{{"big.bin", randomBytes(6<<20, 1)}, {"ok.bin", randomBytes(100_000, 3)}})
	if read := sendRefusingBig(t, files, dst, 1<<20); read > 1<<20 {
		t.Errorf("%d of the refused file's bytes were read to be sent at 256 KiB/s; want what two round trips carry", read)
	}
}
