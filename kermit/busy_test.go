package kermit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// wrapStore is a filestore.Dir whose files are wrap of its own.
type wrapStore struct {
	*filestore.Dir
	wrap func(kermit.Incoming) kermit.Incoming
}

func (s wrapStore) Create(name string) (kermit.Incoming, error) {
	in, err := s.Dir.Create(name)
	if err != nil {
		return nil, err
	}
	return s.wrap(in), nil
}

// slowPartial makes a file's Partial (reading a kept partial for its
// check) slow, and calls during it.
type slowPartial struct {
	kermit.Incoming
	during func()
}

func (p slowPartial) Partial() (int64, uint32, error) {
	time.Sleep(100 * time.Millisecond)
	p.during()
	return p.Incoming.Partial()
}

// While one side reads a partial file for its check, both sessions on a
// reliable link are Busy: an idle watchdog must not take that silence
// for a peer gone (a 60 GB partial takes minutes to read). Afterwards,
// with the transfer done, neither is.
func TestBusyWhileAPartialIsChecked(t *testing.T) {
	data := randomBytes(1<<20, 9)
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"big.bin", data}})
	os.WriteFile(filepath.Join(dst, ".big.bin"+filestore.PartSuffix), data[:300_000], 0o600)
	cfg := kermit.DefaultConfig()
	cfg.Reliable, cfg.Resume = true, true
	a, b := link(t, 0, 1)
	recv, send := kermit.NewSession(b, cfg), kermit.NewSession(a, cfg)
	defer recv.Close()
	defer send.Close()
	var recvBusy, sendBusy atomic.Bool
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	during := func() { recvBusy.Store(recv.Busy()); sendBusy.Store(send.Busy()) }
	store := wrapStore{dir, func(in kermit.Incoming) kermit.Incoming { return slowPartial{in, during} }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, store) }()
	if err := send.Send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := <-rerr; err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dst, []testFile{{"big.bin", data}})
	if !recvBusy.Load() || !sendBusy.Load() {
		t.Errorf("during the receiver's check of its partial: receiver busy %v, sender busy %v; want both", recvBusy.Load(), sendBusy.Load())
	}
	if recv.Busy() {
		t.Error("receiver still busy after the transfer")
	}
}

// tightStore holds files of at most limit bytes (kermit.RoomChecker).
func tightStore(d *filestore.Dir, limit int64) kermit.Store {
	return wrapStore{d, func(in kermit.Incoming) kermit.Incoming { return tightFile{in, limit} }}
}

type tightFile struct {
	kermit.Incoming
	limit int64
}

func (f tightFile) Room(n int64) error {
	if n > f.limit {
		return errors.New("no space left for it")
	}
	return nil
}

// A file announced bigger than the room left is refused at its A, before
// its data, naming why; the group's other files arrive. Both paths.
func TestFileTooBigForTheDiskIsRefused(t *testing.T) {
	for _, dual := range []bool{false, true} {
		t.Run(map[bool]string{false: "classic", true: "dual"}[dual], func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"big.bin", randomBytes(50_000, 1)}, {"small.bin", randomBytes(500, 2)}})
			dir, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			scfg := kermit.DefaultConfig()
			var why []string // the sender's reasons for files not sent
			scfg.Events = func(e kermit.Event) {
				if e.Err != nil {
					why = append(why, e.Name+": "+e.Err.Error())
				}
			}
			serr, rerr := transferEither(t, dual, scfg, kermit.DefaultConfig(), out, tightStore(dir, 10_000))
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "big.bin" {
				t.Fatalf("send: %v; want a group error naming big.bin", serr)
			}
			if len(why) != 1 || !strings.Contains(why[0], "big.bin") || !strings.Contains(why[0], "no space left") {
				t.Errorf("the sender was told %q; want big.bin's reason", why)
			}
			if rerr != nil {
				t.Fatalf("receive: %v", rerr)
			}
			checkFiles(t, dst, []testFile{{"small.bin", randomBytes(500, 2)}})
			if _, err := os.Stat(filepath.Join(dst, "big.bin")); err == nil {
				t.Error("big.bin stored")
			}
		})
	}
}
