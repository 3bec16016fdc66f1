package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// eventOrder records the order of a session's file events.
type eventOrder struct {
	mu  sync.Mutex
	seq []kermit.Event
}

func (o *eventOrder) note(e kermit.Event) {
	if e.Kind == kermit.FileProgress {
		return
	}
	o.mu.Lock()
	o.seq = append(o.seq, e)
	o.mu.Unlock()
}

// at is the index of the first event of kind for name, or -1.
func (o *eventOrder) at(kind kermit.EventKind, name string) int {
	for i, e := range o.seq {
		if e.Kind == kind && e.Name == name {
			return i
		}
	}
	return -1
}

func (o *eventOrder) count(kind kermit.EventKind, name string) int {
	n := 0
	for _, e := range o.seq {
		if e.Kind == kind && e.Name == name {
			n++
		}
	}
	return n
}

// A long group is saved in parts: the receiver saves every savedEvery
// files and says so in that Z's ACK, so that both sides report those
// files saved then, not at the group's end, and keep nothing of them
// (memory independent of the files of one group). Over a reliable link
// the sender hears it; over an unreliable one (a serial line, whose
// ACKs may come out of order) only the receiver's own reports come
// early. Both with and without the data channel.
func TestLongGroupIsSavedInParts(t *testing.T) {
	defer kermit.SetSavedEvery(5)()
	for _, tc := range []struct {
		name           string
		dual, reliable bool
	}{
		{"dual", true, true},
		{"one channel", false, true},
		{"unreliable", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			const n = 23
			out := numberedFiles(src, "f%02d", n, 3000)
			var sent, recvd eventOrder
			serr, rerr := sendInto(t, out, dst, tc.dual, tc.reliable, &sent, &recvd, func(d *filestore.Dir) kermit.Store { return d })
			if serr != nil || rerr != nil {
				t.Fatalf("send %v, receive %v", serr, rerr)
			}
			last := out[n-1].Name
			for j, f := range out {
				want, _ := os.ReadFile(filepath.Join(src, fmt.Sprint(j)))
				if got, err := os.ReadFile(filepath.Join(dst, f.Name)); err != nil || string(got) != string(want) {
					t.Errorf("%s: %d bytes, %v", f.Name, len(got), err)
				}
				for side, o := range map[string]*eventOrder{"sender": &sent, "receiver": &recvd} {
					if c := o.count(kermit.FileSaved, f.Name); c != 1 {
						t.Errorf("%s told %s saved %d times", side, f.Name, c)
					}
					if o.at(kermit.FileSaved, f.Name) < o.at(kermit.FileDone, f.Name) {
						t.Errorf("%s told %s saved before done", side, f.Name)
					}
				}
			}
			// f00..f04 are saved at f04's Z; the last file only at the B.
			early := func(o *eventOrder) bool {
				return o.at(kermit.FileSaved, "f00") < o.at(kermit.FileDone, last)
			}
			if !early(&recvd) {
				t.Error("the receiver told f00 saved only at the group's end")
			}
			if early(&sent) != tc.reliable {
				t.Errorf("the sender told f00 saved before the last file's end: %v, want %v", early(&sent), tc.reliable)
			}
		})
	}
}

// A part's save that fails does not end the group: the file it could
// not name is told failed on both sides, no file is told saved that is
// not under its name, the rest of the group is stored, and the group
// fails at its B (as a failed save there does), no more S said.
func TestLongGroupPartSaveFails(t *testing.T) {
	defer kermit.SetSavedEvery(5)()
	src, dst := t.TempDir(), t.TempDir()
	out := numberedFiles(src, "f%02d", 12, 3000)
	var sent, recvd eventOrder
	serr, rerr := sendInto(t, out, dst, true, true, &sent, &recvd, func(d *filestore.Dir) kermit.Store { return renameFailStore{d, dst, "f02"} })
	if rerr == nil {
		t.Fatal("receiver: no error, but f02 was not saved")
	}
	if serr == nil {
		t.Fatal("sender: no error, but f02 was not saved")
	}
	for _, o := range []*eventOrder{&sent, &recvd} {
		for _, e := range o.seq {
			if e.Kind != kermit.FileSaved {
				continue
			}
			if _, err := os.Stat(filepath.Join(dst, e.Name)); err != nil {
				t.Errorf("%s told saved (sending %v), but: %v", e.Name, e.Sending, err)
			}
		}
		if o.at(kermit.FileSaved, "f02") >= 0 || o.at(kermit.FileFailed, "f02") < 0 {
			t.Errorf("f02 (sending %v): saved at %d, failed at %d", o == &sent, o.at(kermit.FileSaved, "f02"), o.at(kermit.FileFailed, "f02"))
		}
	}
	for _, n := range []string{"f05", "f11"} {
		if _, err := os.Stat(filepath.Join(dst, n)); err != nil {
			t.Errorf("%s not stored after the failed part: %v", n, err)
		}
	}
	if i := sent.at(kermit.FileSaved, "f05"); i >= 0 && i < sent.at(kermit.FileDone, "f11") {
		t.Error("the sender told f05 saved before the B, after a failed part (an S after it)")
	}
}

// refusingCreate is a store that refuses every file it is asked to
// create.
type refusingCreate struct{ *filestore.Dir }

func (refusingCreate) Create(name string) (kermit.Incoming, error) {
	return nil, fmt.Errorf("%s: not wanted here", name)
}

// Files the receiver refuses, each announced with its size (so that the
// data path expects its data, to throw away) and each ended by the
// sender with a discarding Z once it has the verdict, leave the
// receiver's data path no record of them, as files received leave
// none: the session's memory does not grow with the files it is told
// of (review).
func TestRefusedFilesAreForgottenByTheDataPath(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	var files []testFile
	for i := range 12 {
		files = append(files, testFile{fmt.Sprintf("f%02d", i), randomBytes(5000+i, int64(i))})
	}
	out := writeFiles(t, src, files)
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// Every file waits for its verdict, so each refusal ends it with Z D.
	scfg, rcfg := kermit.WithVerdictSize(kermit.DefaultConfig(), 1), kermit.DefaultConfig()
	var ends eventOrder
	scfg.Events = ends.note
	a, b := link(t, 0, 1)
	da, db := dualPair(t)
	scfg.Dual, rcfg.Dual = da, db
	scfg.Streaming, rcfg.Streaming = true, true
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, refusingCreate{dir}) }()
	send.Send(ctx, out) // fails: no file stored
	<-rerr
	for _, f := range files {
		if ends.at(kermit.FileSkipped, f.name) < 0 {
			t.Errorf("%s not told refused", f.name)
		}
	}
	if kept := db.path.Stats().FilesKept; kept > 1 {
		t.Errorf("the receiver's data path keeps %d records of %d files refused", kept, len(files))
	}
}

// numberedFiles writes n files of base+j random bytes into src, sent
// as fmt.Sprintf(format, j).
func numberedFiles(src, format string, n, base int) []kermit.OutgoingFile {
	var out []kermit.OutgoingFile
	for j := range n {
		p := filepath.Join(src, fmt.Sprint(j))
		os.WriteFile(p, randomBytes(base+j, int64(j)), 0o644)
		fi, _ := os.Stat(p)
		out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf(format, j), Size: fi.Size(), ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	return out
}

// sendInto sends out on a session over a loopback link (said reliable,
// and then streaming, or not; with a data path or not) to one that
// receives into the store mk makes of a filestore at dst; the two
// sessions' events go to sent and recvd. It returns both sides' errors.
func sendInto(t *testing.T, out []kermit.OutgoingFile, dst string, dual, reliable bool, sent, recvd *eventOrder, mk func(*filestore.Dir) kermit.Store) (serr, rerr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Events, rcfg.Events = sent.note, recvd.note
	scfg.Reliable, rcfg.Reliable = reliable, reliable
	scfg.Streaming, rcfg.Streaming = reliable, reliable
	if dual {
		scfg.Dual, rcfg.Dual = dualPair(t)
	}
	a, b := link(t, 0, 1)
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	rerrc := make(chan error, 1)
	go func() { rerrc <- recv.Receive(ctx, mk(dir)) }()
	serr = send.Send(ctx, out)
	return serr, <-rerrc
}
