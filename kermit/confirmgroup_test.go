package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// renameFailStore is a filestore whose batch flush cannot give one file
// its final name (as on a file system where the name is immutable): the
// file is not there after EndBatch, which says so.
type renameFailStore struct {
	*filestore.Dir
	dir, bad string
}

func (s renameFailStore) EndBatch() error {
	err := s.Dir.EndBatch()
	if _, e := os.Lstat(filepath.Join(s.dir, s.bad)); e == nil {
		os.Remove(filepath.Join(s.dir, s.bad))
		return errors.Join(err, fmt.Errorf("filestore: completing %s: renameat: operation not permitted", s.bad))
	}
	return err
}

// One session; the receiver fails the group at its end because one file
// could not be given its name. That file is told failed, once; the
// others, which the receiver stored, are told done, once, not "not
// confirmed" (they were all told failed after done: a one-file failure
// reported as the whole group's). The same when the name fails in a
// part of a long group saved before its end (savedEvery): the group
// goes on and fails at its B, so the sender confirms the rest as after
// a failed B (the review's case: the group ended at the part, the file
// whose Z made it was told failed though stored, and the rest were not
// sent). Over links said reliable (S in a Z's ACK) or not.
func TestOneSessionGroupFailureConfirmsTheRest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		savedEvery int // 0: the default, more than the group
		reliable   bool
	}{
		{"at the end", 0, false},
		{"in a part", 5, false},
		{"in a part, reliable", 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.savedEvery > 0 {
				defer kermit.SetSavedEvery(tc.savedEvery)()
			}
			src, dst := t.TempDir(), t.TempDir()
			out := numberedFiles(src, "f%d", 20, 30000)
			var log endLog
			err := sendOneSessionOn(t, tc.reliable, out, dst, log.note, func(dir *filestore.Dir) kermit.Store { return renameFailStore{dir, dst, "f7"} })
			// f7 alone fails, in the receiver's words, not the transfer
			// (QA: "the transfer stopped before it said the file was
			// saved", and the E as the command's last word).
			var ge *kermit.GroupError
			if !errors.As(err, &ge) || !slices.Equal(ge.Failed, []string{"f7"}) {
				t.Fatalf("error %v; want f7 alone named failed", err)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if why := fmt.Sprint(log.errs["f7"]); !strings.Contains(why, "receiver failed while saving") || !strings.Contains(why, "operation not permitted") || strings.Contains(why, "transfer stopped") {
				t.Errorf("f7 told failed as %q; want the receiver's failure to save it, in its words", why)
			}
			for j := range 20 {
				name := fmt.Sprintf("f%d", j)
				want := []kermit.EventKind{kermit.FileDone}
				if name == "f7" {
					// Verified whole at its end (told done), then not saved.
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

// failOnceStore fails its first EndBatch as renameFailStore does, then
// works: the second pass stores the file.
type failOnceStore struct {
	renameFailStore
	failed *bool
}

func (s failOnceStore) EndBatch() error {
	if *s.failed {
		return s.Dir.EndBatch()
	}
	*s.failed = true
	return s.renameFailStore.EndBatch()
}

// The group failed at its end for one file, which the second pass then
// stores: the command succeeds but for what failed on its own (the stub
// of a second file of a name, which stays failed and is not what goes
// again), and the directories get their mode and time, which the failed
// group's end never gave them.
func TestConfirmingPassKeepsDirsAndDuplicates(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	out := []kermit.OutgoingFile{{Name: "d", Dir: true, Filled: true, Mode: 0o750, ModeKnown: true, ModTime: when}}
	for _, n := range []string{"a", "x", "b"} {
		p := filepath.Join(src, n)
		os.WriteFile(p, randomBytes(20000, int64(len(n))), 0o644)
		fi, _ := os.Stat(p)
		out = append(out, kermit.OutgoingFile{Name: "d/" + n, Size: fi.Size(), ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	out = append(out, kermit.OutgoingFile{Name: "d/x", Size: 5, Open: func() (kermit.FileReader, error) {
		return nil, errors.New("same name as d/x, sent already")
	}})
	var once bool
	err := sendOneSession(t, out, dst, nil, func(dir *filestore.Dir) kermit.Store {
		return failOnceStore{renameFailStore{dir, dst, "d/x"}, &once}
	})
	var ge *kermit.GroupError
	if !errors.As(err, &ge) || !slices.Equal(ge.Failed, []string{"d/x"}) {
		t.Fatalf("error %v; want the second d/x alone named failed", err)
	}
	for _, n := range []string{"a", "x", "b"} {
		want, _ := os.ReadFile(filepath.Join(src, n))
		if got, err := os.ReadFile(filepath.Join(dst, "d", n)); err != nil || string(got) != string(want) {
			t.Errorf("d/%s: %d bytes, %v", n, len(got), err)
		}
	}
	fi, err := os.Stat(filepath.Join(dst, "d"))
	if err != nil || !fi.ModTime().Equal(when) || fi.Mode().Perm() != 0o750 {
		t.Fatalf("d: %v, %v; want mode 0750 and time %v", fi.Mode(), fi.ModTime(), when)
	}
}

// sendOneSession sends out on one session (SendParallel's one-session
// path) to a receiver storing into dst through the store mk makes of
// it, which goes on receiving after a failed group, as a server does.
func sendOneSession(t *testing.T, out []kermit.OutgoingFile, dst string, log *endLog, mk func(*filestore.Dir) kermit.Store) error {
	t.Helper()
	var events func(kermit.Event)
	if log != nil {
		events = log.note
	}
	return sendOneSessionOn(t, false, out, dst, events, mk)
}

// sendOneSessionOn is sendOneSession over a link said reliable (TCP, as
// the CLI has it) or not, the sender's events going to events.
func sendOneSessionOn(t *testing.T, reliable bool, out []kermit.OutgoingFile, dst string, events func(kermit.Event), mk func(*filestore.Dir) kermit.Store) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Events = events
	a, b := link(t, 0, 1)
	scfg.Dual, rcfg.Dual = dualPair(t)
	scfg.Streaming, rcfg.Streaming = true, true
	scfg.Reliable, rcfg.Reliable = reliable, reliable
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	store := mk(dir)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			var le *kermit.LinkError
			if err := recv.Receive(ctx, store); errors.As(err, &le) {
				return
			}
		}
	})
	err = kermit.SendParallel(ctx, []*kermit.Session{send}, out)
	send.Close()
	cancel()
	wg.Wait()
	return err
}

// A sender on a line (not Reliable) sends no second pass to a receiver
// that did not say it takes one (capas4SecondPass): such a receiver of
// one group has ended, and an S would go unanswered to the retry limit.
// The receiver here ends after its group, the line staying open; the
// sender must not write to it again, and reports the first pass's
// failure. The same receiver saying it takes the pass gets one.
func TestLineSenderWithholdsSecondPass(t *testing.T) {
	for _, takes := range []bool{false, true} {
		t.Run(fmt.Sprintf("receiver takes it=%v", takes), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			src, dst := t.TempDir(), t.TempDir()
			out := numberedFiles(src, "f%d", 5, 3000)
			scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
			if !takes {
				rcfg = kermit.WithoutSecondPass(rcfg)
			}
			a, b := link(t, 0, 1)
			send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
			t.Cleanup(func() { send.Close(); recv.Close() })
			dir, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dir.Close() })
			store := renameFailStore{dir, dst, "f2"}
			after := make(chan int, 1)
			go func() {
				recv.Receive(ctx, store) // the group fails at its end
				if takes {
					recv.Receive(ctx, dir) // the second pass, into a store that works
				}
				// Then whatever the sender writes, until it closes.
				n, _ := io.Copy(io.Discard, b)
				after <- int(n)
			}()
			err = kermit.SendParallel(ctx, []*kermit.Session{send}, out)
			send.Close()
			a.Close() // the session leaves its link open
			heard := <-after
			if !takes && heard > 0 {
				t.Errorf("the sender wrote %d bytes after the group to a receiver that takes no second pass", heard)
			}
			var pe *kermit.PeerError
			switch {
			case !takes && !errors.As(err, &pe):
				t.Errorf("error %v; want the receiver's E of the first pass", err)
			case takes && err != nil:
				// The second pass stored f2 too (the store fails once).
				t.Errorf("error %v after the second pass", err)
			}
			if err := ctx.Err(); err != nil {
				t.Fatalf("the sender ran into the test's deadline: %v", err)
			}
		})
	}
}

// The receiver's side of a second pass that stores the file its group's
// end could not: the failure it told is withdrawn (FileDone, Again), so
// that a serial receive ends as its sender does, with the file saved
// (QA ad: the sender said saved and exited 0, the receiver not saved,
// exit 4, and the file was there).
func TestSecondPassWithdrawsTheReceiversFailure(t *testing.T) {
	ended := secondPassOfF2(t, func(dir *filestore.Dir, dst string, failed *bool) kermit.Store {
		return failOnceStore{renameFailStore{dir, dst, "f2"}, failed}
	})
	if !slices.Equal(ended, []string{"done", "failed", "done again"}) {
		t.Errorf("f2 at the receiver: %v, want done, failed, done again", ended)
	}
}

// secondPassOfF2 sends f0..f4 to a receiver over store, whose first
// group fails saving f2, then takes the sender's second pass; it
// returns how f2 ended at the receiver, event by event.
func secondPassOfF2(t *testing.T, mk func(dir *filestore.Dir, dst string, failed *bool) kermit.Store) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, dst := t.TempDir(), t.TempDir()
	out := numberedFiles(src, "f%d", 5, 3000)
	var mu sync.Mutex
	var ended []string
	rcfg := kermit.DefaultConfig()
	rcfg.Events = func(e kermit.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case e.Name != "f2":
		case e.Kind == kermit.FileFailed:
			ended = append(ended, "failed")
		case e.Kind == kermit.FileDone && e.Again:
			ended = append(ended, "done again")
		case e.Kind == kermit.FileDone:
			ended = append(ended, "done")
		case e.Kind == kermit.FileSkipped:
			ended = append(ended, "skipped")
		}
	}
	a, b := link(t, 0, 1)
	send, recv := kermit.NewSession(a, kermit.DefaultConfig()), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	failed := false
	store := mk(dir, dst, &failed)
	rerr := make(chan error, 1)
	go func() {
		err := recv.Receive(ctx, store)
		if !errors.Is(err, kermit.ErrGroupSaveFailed) {
			rerr <- fmt.Errorf("first group: %v, want ErrGroupSaveFailed", err)
			return
		}
		rerr <- recv.Receive(ctx, store) // the second pass
	}()
	if err := kermit.SendParallel(ctx, []*kermit.Session{send}, out); err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := <-rerr; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "f2")); err != nil {
		t.Errorf("f2 not stored: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return ended
}

// spuriousFailStore's first EndBatch reports a failure to save bad,
// which was saved all the same (as when a partial removed mid-file
// leaves the verdict unsure): the second pass finds it there whole.
type spuriousFailStore struct {
	*filestore.Dir
	bad    string
	failed *bool
}

func (s spuriousFailStore) EndBatch() error {
	err := s.Dir.EndBatch()
	if !*s.failed {
		*s.failed = true
		return errors.Join(err, fmt.Errorf("filestore: completing %s: not sure", s.bad))
	}
	return err
}

func (s spuriousFailStore) Saved(name string) bool { return name != s.bad }

// The second pass finds whole the file its group's end told failed: the
// failure is withdrawn there too, not left standing beside a file that
// is saved (review 53).
func TestSecondPassFindingTheFileWholeWithdrawsTheFailure(t *testing.T) {
	ended := secondPassOfF2(t, func(dir *filestore.Dir, _ string, failed *bool) kermit.Store {
		return spuriousFailStore{dir, "f2", failed}
	})
	if !slices.Equal(ended, []string{"done", "failed", "done again"}) {
		t.Errorf("f2 at the receiver: %v, want done, failed, done again", ended)
	}
}
