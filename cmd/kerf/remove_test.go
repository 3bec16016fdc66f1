package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/kermit"
)

// The remover takes a file sent only when the receiver has it and only
// if it is still the file that was sent.
func TestSourceRemover(t *testing.T) {
	type change func(t *testing.T, path string)
	appendTo := func(t *testing.T, p string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("more")
		f.Close()
	}
	rewriteSameSizeAndTime := func(t *testing.T, p string) {
		fi, _ := os.Stat(p)
		if err := os.WriteFile(p, []byte("HELLO"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
	}
	replace := func(t *testing.T, p string) {
		fi, _ := os.Stat(p)
		tmp := p + ".new"
		os.WriteFile(tmp, []byte("hello"), 0o644)
		os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	done := kermit.Event{Kind: kermit.FileDone}
	saved := kermit.Event{Kind: kermit.FileSaved}
	final := kermit.Event{Kind: kermit.FileDone, Final: true}
	failed := kermit.Event{Kind: kermit.FileFailed}
	cases := []struct {
		name   string
		change change // after the file's start
		after  []kermit.Event
		gone   bool
		kept   string
	}{
		{"saved", nil, []kermit.Event{done, saved}, true, ""},
		{"done only, a kerf receiver", nil, []kermit.Event{done}, false, ""},
		{"done, a classic receiver", nil, []kermit.Event{final}, true, ""},
		// Its RESEND went on from what it said it had: no check of that.
		{"resumed by a classic receiver", nil, []kermit.Event{{Kind: kermit.FileDone, Final: true, Offset: 2, Size: 5}}, false, "the classic Kermit receiver went on from byte 2, which it said it had: no check confirms its copy"},
		{"found whole by a classic receiver", nil, []kermit.Event{{Kind: kermit.FileDone, Final: true, Offset: 5, Size: 5}}, false, "the classic Kermit receiver said it had the whole file: no check confirms its copy"},
		{"failed, then a stray saved", nil, []kermit.Event{failed, saved}, false, ""},
		{"appended to", appendTo, []kermit.Event{done, saved}, false, "changed since it was sent"},
		{"rewritten in place, size and time put back", rewriteSameSizeAndTime, []kermit.Event{done, saved}, false, "changed since it was sent"},
		{"replaced by another file of its size and time", replace, []kermit.Event{done, saved}, false, "replaced since it was sent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, old := hourOldFile(t)
			var kept []string
			m := newSourceRemover(func(_, _, why string) { kept = append(kept, why) }, nil)
			m.event(kermit.Event{Kind: kermit.FileStart, Name: "f.txt", Path: p, Size: 5, ModTime: old, Sending: true})
			if tc.change != nil {
				time.Sleep(10 * time.Millisecond) // a ctime the clock can tell apart
				tc.change(t, p)
			}
			for _, e := range tc.after {
				e.Name, e.Path, e.Sending = "f.txt", p, true
				m.event(e)
			}
			_, err := os.Stat(p)
			if gone := os.IsNotExist(err); gone != tc.gone {
				t.Errorf("removed: %v, want %v", gone, tc.gone)
			}
			if tc.kept == "" && len(kept) > 0 || tc.kept != "" && (len(kept) != 1 || kept[0] != tc.kept) {
				t.Errorf("kept: %q, want %q", kept, tc.kept)
			}
		})
	}
}

// A file a resume finds there whole goes if it is as listed; one whose
// size or time differs from what the receiver matched stays.
func TestSourceRemoverAlreadyThere(t *testing.T) {
	p, old := hourOldFile(t)
	var kept []string
	m := newSourceRemover(func(_, _, why string) { kept = append(kept, why) }, nil)
	skip := kermit.Event{Kind: kermit.FileSkipped, Err: kermit.ErrAlreadyThere, Name: "f.txt", Path: p, Size: 5, ModTime: old.Add(time.Second), Sending: true}
	m.event(skip)
	if _, err := os.Stat(p); err != nil || len(kept) != 1 {
		t.Fatalf("a file of another time than matched: %v, kept %q", err, kept)
	}
	skip.ModTime = old
	m.event(skip)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("a file found there whole stays (%v)", err)
	}
	// A receiving session's events are not a send's.
	q := filepath.Join(t.TempDir(), "g.txt")
	os.WriteFile(q, []byte("x"), 0o644)
	m.event(kermit.Event{Kind: kermit.FileStart, Name: "g.txt", Path: q, Size: 1})
	m.event(kermit.Event{Kind: kermit.FileSaved, Name: "g.txt", Path: q, Size: 1})
	if _, err := os.Stat(q); err != nil {
		t.Errorf("a received file was removed: %v", err)
	}
}

// To a server on this machine, a file it has whole already stays: what
// it has may be this very file (QA: send --resume --remove-source-files
// of a file in the server's own tree removed the only copy). (Which
// addresses are this machine's: datachan's TestSameHost.)
func TestSourceRemoverServerOnThisMachine(t *testing.T) {
	p, old := hourOldFile(t)
	var kept []string
	m := newSourceRemover(func(_, _, why string) { kept = append(kept, why) }, nil)
	m.local = true
	m.event(kermit.Event{Kind: kermit.FileSkipped, Err: kermit.ErrAlreadyThere, Name: "f.txt", Path: p, Size: 5, ModTime: old, Sending: true})
	if _, err := os.Stat(p); err != nil || len(kept) != 1 || !strings.Contains(kept[0], "this machine") {
		t.Errorf("found whole by a server on this machine: %v, kept %q", err, kept)
	}
}

// A server elsewhere whose copy has this file's inode number may reach
// this very file through a file system both machines mount (NFS): it
// stays. A copy of another number goes, as any file found whole.
func TestSourceRemoverServerCopyOfThisInode(t *testing.T) {
	for _, same := range []bool{true, false} {
		p, old := hourOldFile(t)
		var kept []string
		m := newSourceRemover(func(_, _, why string) { kept = append(kept, why) }, nil)
		ino := inodeOf(p)
		if !same {
			ino++
		}
		m.event(kermit.Event{Kind: kermit.FileSkipped, Err: kermit.ErrAlreadyThere, Name: "f.txt", Path: p, Size: 5, ModTime: old, Sending: true, ThereIno: ino})
		_, err := os.Stat(p)
		switch {
		case same && (err != nil || len(kept) != 1 || !strings.Contains(kept[0], "inode number")):
			t.Errorf("the server's copy has this file's inode: %v, kept %q", err, kept)
		case !same && (err == nil || len(kept) != 0):
			t.Errorf("the server's copy has another inode: still here (%v), kept %q", err, kept)
		}
	}
}

// hourOldFile makes f.txt ("hello"), last modified an hour ago, to the
// second: a file sent and then found whole at the receiver.
func hourOldFile(t *testing.T) (string, time.Time) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return p, old
}

// A link the walk meets after the remover moved its file is passed over,
// naming the file it went as; one to a file gone otherwise is not.
func TestLinkToAFileThisSendMoved(t *testing.T) {
	p, old := hourOldFile(t)
	dir := filepath.Dir(p)
	link, other := filepath.Join(dir, "link.txt"), filepath.Join(dir, "other.txt")
	os.WriteFile(filepath.Join(dir, "gone.txt"), nil, 0o644)
	if os.Symlink("f.txt", link) != nil || os.Symlink("gone.txt", other) != nil {
		t.Fatal("symlink")
	}
	m := newSourceRemover(func(_, _, why string) { t.Errorf("kept: %s", why) }, nil)
	// A relative path, as a send of "dir/f.txt" from elsewhere has.
	t.Chdir(filepath.Dir(dir))
	rel := filepath.Join(filepath.Base(dir), "f.txt")
	m.event(kermit.Event{Kind: kermit.FileStart, Name: "spool/f.txt", Path: rel, Size: 5, ModTime: old, Sending: true})
	m.event(kermit.Event{Kind: kermit.FileSaved, Name: "spool/f.txt", Path: rel, Sending: true})
	os.Remove(filepath.Join(dir, "gone.txt"))
	_, err := os.Stat(link)
	if err := linkToMoved(link, err); !errors.Is(err, kermit.ErrPassedOver) || !strings.Contains(err.Error(), "moved already (sent as spool/f.txt") {
		t.Errorf("a link to the file moved: %v; want passed over, naming it", err)
	}
	_, err = os.Stat(other)
	if err := linkToMoved(other, err); err != nil {
		t.Errorf("a link to a file removed otherwise: %v; want nil", err)
	}
}
