package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
			var out []kermit.OutgoingFile
			for j := range n {
				p := filepath.Join(src, fmt.Sprint(j))
				os.WriteFile(p, randomBytes(3000+j, int64(j)), 0o644)
				fi, _ := os.Stat(p)
				out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("f%02d", j), Size: fi.Size(), ModTime: fi.ModTime(),
					Open: func() (kermit.FileReader, error) { return os.Open(p) }})
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
			var sent, recvd eventOrder
			scfg.Events, rcfg.Events = sent.note, recvd.note
			scfg.Reliable, rcfg.Reliable = tc.reliable, tc.reliable
			scfg.Streaming, rcfg.Streaming = tc.reliable, tc.reliable
			if tc.dual {
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
			rerr := make(chan error, 1)
			go func() { rerr <- recv.Receive(ctx, dir) }()
			if err := send.Send(ctx, out); err != nil {
				t.Fatalf("send: %v", err)
			}
			if err := <-rerr; err != nil {
				t.Fatalf("receive: %v", err)
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
	var out []kermit.OutgoingFile
	for j := range 12 {
		p := filepath.Join(src, fmt.Sprint(j))
		os.WriteFile(p, randomBytes(3000+j, int64(j)), 0o644)
		fi, _ := os.Stat(p)
		out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("f%02d", j), Size: fi.Size(), ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	var sent eventOrder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	var recvd eventOrder
	scfg.Events, rcfg.Events = sent.note, recvd.note
	scfg.Reliable, rcfg.Reliable = true, true
	scfg.Streaming, rcfg.Streaming = true, true
	scfg.Dual, rcfg.Dual = dualPair(t)
	a, b := link(t, 0, 1)
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, renameFailStore{dir, dst, "f02"}) }()
	serr := send.Send(ctx, out)
	if err := <-rerr; err == nil {
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

// After a part's failed save, the sender confirms the files it was not
// told were saved, as after a failed B: only the file that could not be
// named ends failed, and each other file is told done once (the
// reviewer's case: before, the group ended at the part, the file whose Z
// made it was told failed though stored, and the rest were not sent).
func TestPartSaveFailureConfirmsTheRest(t *testing.T) {
	defer kermit.SetSavedEvery(5)()
	for _, reliable := range []bool{true, false} {
		t.Run(fmt.Sprintf("reliable=%v", reliable), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			var out []kermit.OutgoingFile
			for j := range 20 {
				p := filepath.Join(src, fmt.Sprint(j))
				os.WriteFile(p, randomBytes(30000+j, int64(j)), 0o644)
				fi, _ := os.Stat(p)
				out = append(out, kermit.OutgoingFile{Name: fmt.Sprintf("f%d", j), Size: fi.Size(), ModTime: fi.ModTime(),
					Open: func() (kermit.FileReader, error) { return os.Open(p) }})
			}
			var log endLog
			err := sendOneSessionOn(t, reliable, out, dst, &log, func(dir *filestore.Dir) kermit.Store { return renameFailStore{dir, dst, "f7"} })
			if err == nil {
				t.Error("no error, but f7 was not stored")
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			for j := range 20 {
				name := fmt.Sprintf("f%d", j)
				want := []kermit.EventKind{kermit.FileDone}
				if name == "f7" {
					want = append(want, kermit.FileFailed)
				}
				if k := log.ended[name]; !slices.Equal(k, want) {
					t.Errorf("%s ended %v, want %v", name, k, want)
				}
				_, serr := os.Stat(filepath.Join(dst, name))
				if (serr == nil) != (name != "f7") {
					t.Errorf("%s stored: %v", name, serr)
				}
			}
		})
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
