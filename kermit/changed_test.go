package kermit_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kerf/filestore"
	"kerf/kermit"
)

// A file written to while it is sent (here: grown, the moment it is
// opened) arrives as a mix of old and new bytes whose checks all pass:
// the sender tells the receiver to discard it and reports it failed,
// naming the change, and the group's other files arrive. Both the
// classic and the dual-channel paths.
func TestFileChangedWhileSentIsNotStored(t *testing.T) {
	for _, dual := range []bool{false, true} {
		name := "classic"
		if dual {
			name = "dual"
		}
		t.Run(name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"grows.log", randomBytes(300_000, 7)}, {"steady.bin", randomBytes(5000, 8)}})
			p := filepath.Join(src, "grows.log")
			open := out[0].Open
			out[0].Open = func() (kermit.FileReader, error) {
				r, err := open()
				if err == nil {
					f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Error(err)
						return r, nil
					}
					if _, err := f.Write([]byte("a line written while the file was sent\n")); err != nil {
						t.Error(err)
					}
					f.Close()
				}
				return r, err
			}
			serr, rerr := transferEitherInto(t, dual, kermit.DefaultConfig(), kermit.DefaultConfig(), out, dst)
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "grows.log" {
				t.Fatalf("send: %v; want a group error naming grows.log", serr)
			}
			if rerr != nil {
				t.Fatalf("receive: %v", rerr)
			}
			if _, err := os.Stat(filepath.Join(dst, "grows.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("grows.log stored (%v); want it discarded", err)
			}
			checkFiles(t, dst, []testFile{{"steady.bin", randomBytes(5000, 8)}})
		})
	}
}

// A file cut short while it is sent (a log rotated by copytruncate)
// cannot even be read to its announced end: that one file is dropped,
// with a reason naming the change, and the group goes on, whether it was
// one block (batched small files) or many, classic or dual.
func TestFileShrunkWhileSentFailsAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		dual bool
		size int
	}{
		{"classic", false, 300_000},
		{"dual, many blocks", true, 5 << 20},
		{"dual, one small block", true, 20_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"first.bin", randomBytes(7000, 1)}, {"shrinks.log", randomBytes(tc.size, 7)}, {"steady.bin", randomBytes(5000, 8)}})
			p := filepath.Join(src, "shrinks.log")
			open := out[1].Open
			out[1].Open = func() (kermit.FileReader, error) {
				r, err := open()
				if err == nil {
					if err := os.Truncate(p, int64(tc.size/3)); err != nil {
						t.Error(err)
					}
				}
				return r, err
			}
			scfg := kermit.DefaultConfig()
			var mu sync.Mutex
			var why []string
			scfg.Events = func(e kermit.Event) {
				if e.Kind == kermit.FileFailed {
					mu.Lock()
					why = append(why, e.Name+": "+e.Err.Error())
					mu.Unlock()
				}
			}
			serr, rerr := transferEitherInto(t, tc.dual, scfg, kermit.DefaultConfig(), out, dst)
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "shrinks.log" {
				t.Fatalf("send: %v; want a group error naming shrinks.log only", serr)
			}
			mu.Lock()
			if len(why) != 1 || !strings.Contains(why[0], "changed while it was being sent") {
				t.Errorf("failures reported: %q; want one, naming the change", why)
			}
			mu.Unlock()
			if rerr != nil {
				t.Fatalf("receive: %v", rerr)
			}
			if _, err := os.Stat(filepath.Join(dst, "shrinks.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("shrinks.log stored (%v); want it discarded", err)
			}
			checkFiles(t, dst, []testFile{{"first.bin", randomBytes(7000, 1)}, {"steady.bin", randomBytes(5000, 8)}})
		})
	}
}

// A file cut short in the middle of a dual-channel send, after part of
// it was read: blocks read before the cut may go out padded (sendfile)
// or be asked for again, and their re-read comes short (or, copied,
// the read comes short at once). That file is
// dropped, and the group goes on; the data path does not fail.
func TestFileShrunkMidSendFailsAlone(t *testing.T) { eitherSendfile(t, fileShrunkMidSendFailsAlone) }

func fileShrunkMidSendFailsAlone(t *testing.T) {
	for i := range 3 {
		src, dst := t.TempDir(), t.TempDir()
		out := writeFiles(t, src, []testFile{{"first.bin", randomBytes(7000, 1)}, {"shrinks.log", randomBytes(64<<20, 7)}, {"steady.bin", randomBytes(5000, 8)}})
		p := filepath.Join(src, "shrinks.log")
		scfg := kermit.DefaultConfig()
		var once sync.Once
		scfg.Events = func(e kermit.Event) {
			if e.Kind == kermit.FileProgress && e.Name == "shrinks.log" && e.Bytes > 16<<20 {
				once.Do(func() { os.Truncate(p, 8<<20) })
			}
		}
		_, serr, rerr := dualTransfer(t, scfg, kermit.DefaultConfig(), out, dst)
		var ge *kermit.GroupError
		if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "shrinks.log" || rerr != nil {
			t.Fatalf("run %d: send %v, receive %v; want a group error naming shrinks.log only", i, serr, rerr)
		}
		checkFiles(t, dst, []testFile{{"first.bin", randomBytes(7000, 1)}, {"steady.bin", randomBytes(5000, 8)}})
	}
}

// A file written in place while it is sent, then given back its size and
// modification time (touch -r), is caught by its ctime, which only the
// kernel sets: not stored, and named, on both paths.
func TestFileRewrittenKeepingItsTimeIsNotStored(t *testing.T) {
	for _, dual := range []bool{false, true} {
		t.Run(map[bool]string{false: "classic", true: "dual"}[dual], func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"torn.bin", randomBytes(300_000, 9)}, {"steady.bin", randomBytes(5000, 8)}})
			p := filepath.Join(src, "torn.bin")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			out[0].ModTime, out[0].ChangeTime = fi.ModTime(), kermit.ChangeTimeOf(fi)
			if out[0].ChangeTime.IsZero() {
				t.Fatal("no ctime on this system: the test tests nothing")
			}
			open := out[0].Open
			out[0].Open = func() (kermit.FileReader, error) {
				r, err := open()
				if err == nil {
					f, err := os.OpenFile(p, os.O_WRONLY, 0)
					if err != nil {
						t.Error(err)
						return r, nil
					}
					f.WriteAt(randomBytes(4096, 99), 200_000)
					f.Close()
					os.Chtimes(p, fi.ModTime(), fi.ModTime())
				}
				return r, err
			}
			serr, rerr := transferEitherInto(t, dual, kermit.DefaultConfig(), kermit.DefaultConfig(), out, dst)
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "torn.bin" {
				t.Fatalf("send: %v; want a group error naming torn.bin", serr)
			}
			if rerr != nil {
				t.Fatalf("receive: %v", rerr)
			}
			if _, err := os.Stat(filepath.Join(dst, "torn.bin")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("torn.bin stored (%v); want it discarded", err)
			}
			checkFiles(t, dst, []testFile{{"steady.bin", randomBytes(5000, 8)}})
		})
	}
}

// A file removed, or renamed, while it is sent is said to be so, not
// "written to" (either moves its ctime), and is not stored (QA: a
// rename was said to be a write with its time put back).
func TestFileRemovedWhileSentSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name string
		move func(p string) error
		want string
	}{
		{"removed", os.Remove, "was removed, or replaced by another file of its name, while it was being sent"},
		{"renamed", func(p string) error { return os.Rename(p, p+".moved") }, "was renamed, or another file put at its name, while it was being sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"gone.bin", randomBytes(100_000, 9)}})
			p := filepath.Join(src, "gone.bin")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			out[0].ModTime, out[0].ChangeTime = fi.ModTime(), kermit.ChangeTimeOf(fi)
			open := out[0].Open
			out[0].Open = func() (kermit.FileReader, error) {
				r, err := open()
				if err == nil {
					time.Sleep(20 * time.Millisecond) // a ctime the change moves
					if err := tc.move(p); err != nil {
						t.Error(err)
					}
				}
				return r, err
			}
			serr, why := sendSeeingFailure(t, out, dst)
			if serr == nil || why == nil || !strings.Contains(why.Error(), tc.want) {
				t.Fatalf("send: %v, file error %v; want %q", serr, why, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dst, "gone.bin")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("gone.bin stored (%v)", err)
			}
		})
	}
}

// sendSeeingFailure sends out into dst over the dual path and returns
// the send's error and the last file failure's.
func sendSeeingFailure(t *testing.T, out []kermit.OutgoingFile, dst string) (serr, why error) {
	t.Helper()
	var mu sync.Mutex
	scfg := kermit.DefaultConfig()
	scfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileFailed {
			mu.Lock()
			why = e.Err
			mu.Unlock()
		}
	}
	serr, _ = transferEitherInto(t, true, scfg, kermit.DefaultConfig(), out, dst)
	mu.Lock()
	defer mu.Unlock()
	return serr, why
}

// A file listed and removed before its turn is said to be removed, not
// left to a bare "open ...: no such file or directory" (QA).
func TestFileRemovedBeforeItsTurnSaysSo(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"gone.bin", randomBytes(1000, 10)}, {"kept.bin", randomBytes(1000, 11)}})
	p := filepath.Join(src, "gone.bin")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	out[0].ModTime = fi.ModTime()
	open := out[0].Open
	out[0].Open = func() (kermit.FileReader, error) {
		os.Remove(p)
		return open()
	}
	serr, why := sendSeeingFailure(t, out, dst)
	if serr == nil || why == nil || !strings.Contains(why.Error(), "gone.bin was removed after it was listed") || !errors.Is(why, fs.ErrNotExist) {
		t.Fatalf("send: %v, file error %v; want it said removed after it was listed", serr, why)
	}
	checkFiles(t, dst, []testFile{{"kept.bin", randomBytes(1000, 11)}})
}

// A file whose ctime moves while it is sent for new links alone (a
// snapshot tool's hard link) did not change its data: it is stored, on
// both paths. (It failed as "changed" before: QA.) A chmod is not taken
// the same way (cp -p rewrites in place, restores the time, sets a
// mode): that file fails, as a rewrite does.
func TestFileLinkedWhileSentIsStored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(p string) error
		stored bool
	}{
		{"hard link made", func(p string) error { return os.Link(p, p+".snapshot") }, true},
		{"chmod", func(p string) error { return os.Chmod(p, 0o600) }, false},
	} {
		for _, dual := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: ", classic", true: ", dual"}[dual], func(t *testing.T) {
				src, dst := t.TempDir(), t.TempDir()
				data := randomBytes(300_000, 9)
				out := writeFiles(t, src, []testFile{{"kept.bin", data}})
				p := filepath.Join(src, "kept.bin")
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				out[0].ModTime, out[0].ChangeTime, out[0].Status = fi.ModTime(), kermit.ChangeTimeOf(fi), kermit.StatusOf(fi)
				if !out[0].Status.Known {
					t.Fatal("no file status on this system: the test tests nothing")
				}
				out[0].Open = func() (kermit.FileReader, error) {
					// The client's opener: the status as opened comes
					// from the open's own fstat, before the change.
					r, err := filestore.OpenLocal(p)
					if err == nil {
						time.Sleep(20 * time.Millisecond) // a ctime the change moves
						if err := tc.change(p); err != nil {
							t.Error(err)
						}
					}
					return r, err
				}
				serr, rerr := transferEitherInto(t, dual, kermit.DefaultConfig(), kermit.DefaultConfig(), out, dst)
				if rerr != nil {
					t.Fatalf("receive: %v", rerr)
				}
				if !tc.stored {
					var ge *kermit.GroupError
					if !errors.As(serr, &ge) || len(ge.Failed) != 1 {
						t.Fatalf("send: %v; want kept.bin failed as changed", serr)
					}
					if _, err := os.Stat(filepath.Join(dst, "kept.bin")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("kept.bin stored (%v); want it discarded", err)
					}
					return
				}
				if serr != nil {
					t.Fatalf("send %v; want the file stored", serr)
				}
				checkFiles(t, dst, []testFile{{"kept.bin", data}})
			})
		}
	}
}

// A file replaced between its listing and its turn (a new version
// renamed over it), or changed in place meanwhile (a log appended to,
// its mode changed), is sent as it is then, with its own size, time and
// mode, as rsync sends what is there: not failed as changed (QA: a get
// -r while the tree was being published again failed hundreds of
// files; a send -r of a live tree every log appended to after the
// walk). Only what changes once it is open fails it. With
// filestore.OpenLocal (the client's opener) the sender takes the status
// from the open's own fstat (OpenedStat), not a second one.
func TestFileChangedBeforeItsTurnIsSentAsItIsThen(t *testing.T) {
	openers := map[string]func(string) (kermit.FileReader, error){
		"os.Open":   func(p string) (kermit.FileReader, error) { return os.Open(p) },
		"OpenLocal": func(p string) (kermit.FileReader, error) { return filestore.OpenLocal(p) },
	}
	first, more := randomBytes(100_000, 5), randomBytes(250_000, 6)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string) // after the listing
		want   []byte
		mode   fs.FileMode
	}{
		{"replaced", func(t *testing.T, p string) {
			if err := os.WriteFile(p+".new", more, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}, more, 0o644},
		{"appended", func(t *testing.T, p string) {
			time.Sleep(20 * time.Millisecond) // a modification time the append moves
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(more)
			f.Close()
			os.Chmod(p, 0o640)
		}, append(slices.Clone(first), more...), 0o640},
	} {
		for _, dual := range []bool{false, true} {
			for oname, open := range openers {
				t.Run(tc.name+"/"+map[bool]string{false: "classic", true: "dual"}[dual]+"/"+oname, func(t *testing.T) {
					src, dst := t.TempDir(), t.TempDir()
					out := writeFiles(t, src, []testFile{{"pub.bin", first}})
					p := filepath.Join(src, "pub.bin")
					os.Chmod(p, 0o644)
					fi, err := os.Stat(p)
					if err != nil {
						t.Fatal(err)
					}
					out[0].ModTime, out[0].ChangeTime, out[0].Status = fi.ModTime(), kermit.ChangeTimeOf(fi), kermit.StatusOf(fi)
					out[0].Mode, out[0].ModeKnown = fi.Mode().Perm(), true
					out[0].Open = func() (kermit.FileReader, error) { return open(p) }
					tc.change(t, p)
					serr, rerr := transferEitherInto(t, dual, kermit.DefaultConfig(), kermit.DefaultConfig(), out, dst)
					if serr != nil || rerr != nil {
						t.Fatalf("send %v, receive %v; want the file stored as it is now", serr, rerr)
					}
					checkFiles(t, dst, []testFile{{"pub.bin", tc.want}})
					if fi, err := os.Stat(filepath.Join(dst, "pub.bin")); err != nil || fi.Mode().Perm() != tc.mode {
						t.Errorf("stored with mode %v (%v), want the file's mode now, %v", fi.Mode(), err, tc.mode)
					}
				})
			}
		}
	}
}

// A link to a file that a --remove-source-files of this process moved
// (sent under its own name, then removed) is no changed file: sent
// while the removal happens, it is stored; met after it, it is passed
// over, naming the file it went as. A write after the removal, through
// a descriptor still open, fails it as before (e2e: a get with four
// sessions failed now and then on a link to a file another session
// moved).
func TestLinkToAMovedFile(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before      bool // removed before the link's open, not during its send
		writeAfter  bool // written through an open descriptor after the removal
		wantStored  bool
		wantFailure string
		wantSkipped string
		otherScope  bool // the removal is not of the file's scope
		own         bool // the file itself is listed, not a link to it
	}{
		{name: "during", wantStored: true},
		{name: "during, written after", writeAfter: true, wantFailure: "was removed, or replaced"},
		{name: "before", before: true, wantSkipped: "its file was moved already (sent as target.bin"},
		{name: "during, moved in another scope", otherScope: true, wantFailure: "was removed, or replaced"},
		{name: "before, moved in another scope", before: true, otherScope: true, wantFailure: "the file its symbolic link led to was removed after it was listed"},
		// Another transfer's entry for the file itself: it never had
		// the bytes (review 52b).
		{name: "the file itself, moved before its turn", before: true, own: true, wantFailure: "was removed after it was listed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			data := randomBytes(100_000, 21)
			out := writeFiles(t, src, []testFile{{"target.bin", data}})
			p, link := filepath.Join(src, "target.bin"), filepath.Join(src, "link.bin")
			if err := os.Symlink("target.bin", link); err != nil {
				t.Fatal(err)
			}
			out[0].Name = "link.bin"
			t0 := time.Unix(1_700_000_000, 0) // put back whole by Futimes
			if err := os.Chtimes(p, t0, t0); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			out[0].ModTime, out[0].ChangeTime, out[0].Status = fi.ModTime(), kermit.ChangeTimeOf(fi), kermit.StatusOf(fi)
			moved := new(kermit.MovedFiles)
			if !tc.otherScope {
				out[0].Moved = moved
			}
			move := func() {
				var w *os.File
				if tc.writeAfter {
					w, _ = os.OpenFile(p, os.O_WRONLY, 0)
				}
				if err := os.Remove(p); err != nil {
					t.Error(err)
				}
				moved.Note(kermit.StatusOf(fi), fi.Size(), fi.ModTime(), kermit.ChangeTimeOf(fi), "target.bin", filepath.Join(src, "target.bin"))
				if w != nil {
					time.Sleep(20 * time.Millisecond) // a ctime the write moves
					w.WriteAt([]byte("x"), 10)
					// Its time put back: only the ctime tells.
					unix.Futimes(int(w.Fd()), []unix.Timeval{unix.NsecToTimeval(fi.ModTime().UnixNano()), unix.NsecToTimeval(fi.ModTime().UnixNano())})
					w.Close()
				}
			}
			// Opened through the link, as a walk's entry for it is.
			at := link
			if tc.own {
				at = p
			}
			open := func() (kermit.FileReader, error) {
				f, err := os.Open(at)
				if err != nil {
					return nil, kermit.LinkTargetGoneAt(err, func() (fs.FileInfo, error) { return os.Lstat(at) })
				}
				return f, nil
			}
			out[0].Open = func() (kermit.FileReader, error) {
				if tc.before {
					move()
					return open()
				}
				r, err := open()
				if err != nil {
					return r, err
				}
				f, ok := r.(*os.File)
				if !ok {
					t.Fatalf("opened as %T", r)
				}
				// Moved at the first read: after the open's look at it.
				return &readFirst{File: f, first: func() {
					time.Sleep(20 * time.Millisecond) // a ctime the removal moves
					move()
				}}, nil
			}
			var mu sync.Mutex
			var failed, skipped error
			scfg := kermit.DefaultConfig()
			scfg.Events = func(e kermit.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e.Kind {
				case kermit.FileFailed:
					failed = e.Err
				case kermit.FileSkipped:
					skipped = e.Err
				}
			}
			serr, rerr := transferEitherInto(t, true, scfg, kermit.DefaultConfig(), out, dst)
			if rerr != nil {
				t.Fatalf("receive: %v", rerr)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case tc.wantFailure != "":
				if serr == nil || failed == nil || !strings.Contains(failed.Error(), tc.wantFailure) {
					t.Errorf("send: %v, file error %v; want %q", serr, failed, tc.wantFailure)
				}
			case serr != nil || failed != nil:
				t.Errorf("send: %v, file error %v; want no failure", serr, failed)
			}
			if tc.wantSkipped != "" && (skipped == nil || !errors.Is(skipped, kermit.ErrPassedOver) || !strings.Contains(skipped.Error(), tc.wantSkipped)) {
				t.Errorf("skipped: %v; want passed over, %q", skipped, tc.wantSkipped)
			}
			if tc.wantStored {
				checkFiles(t, dst, []testFile{{"link.bin", data}})
			} else if _, err := os.Stat(filepath.Join(dst, "link.bin")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("link.bin stored (%v)", err)
			}
		})
	}
}

// readFirst is an open file that calls first before its first read.
type readFirst struct {
	*os.File
	once  sync.Once
	first func()
}

func (r *readFirst) Read(b []byte) (int, error) {
	r.once.Do(r.first)
	return r.File.Read(b)
}

func (r *readFirst) ReadAt(b []byte, off int64) (int, error) {
	r.once.Do(r.first)
	return r.File.ReadAt(b, off)
}

// A file whose Open says its link's file went is failed in those words,
// not as the link removed (QA ab).
func TestLinkWhoseFileWentIsSaidSo(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"f.bin", randomBytes(1000, 3)}})
	link := filepath.Join(src, "link.bin")
	if err := os.Symlink("f.bin", link); err != nil {
		t.Fatal(err)
	}
	out[0].Name = "link.bin"
	out[0].Open = func() (kermit.FileReader, error) {
		os.Remove(filepath.Join(src, "f.bin"))
		_, err := os.Open(link)
		return nil, kermit.LinkTargetGoneAt(err, func() (fs.FileInfo, error) { return os.Lstat(link) })
	}
	_, why := sendSeeingFailure(t, out, dst)
	if why == nil || !strings.Contains(why.Error(), "link.bin: the file its symbolic link led to was removed after it was listed") {
		t.Errorf("file error %v; want the link's file said to be gone", why)
	}
}
