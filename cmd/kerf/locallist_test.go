package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/kermit"
)

// sendAsEngine plays a one-session send of fl to r as the engine tells
// it: a file that cannot be opened fails, the others start, finish and
// are saved; Late goes after All.
func sendAsEngine(t *testing.T, r *reporter, fl kermit.FileList) (sent, failed []string) {
	t.Helper()
	one := func(f kermit.OutgoingFile) {
		if f.Dir {
			return
		}
		rd, err := f.Open()
		if err != nil {
			r.event(kermit.Event{Kind: kermit.FileFailed, Name: f.Name, Err: err, Sending: true})
			failed = append(failed, f.Name)
			return
		}
		rd.Close()
		r.event(kermit.Event{Kind: kermit.FileStart, Name: f.Name, Size: f.Size, Sending: true})
		r.event(kermit.Event{Kind: kermit.FileProgress, Name: f.Name, Size: f.Size, Bytes: f.Size, Sending: true})
		r.event(kermit.Event{Kind: kermit.FileDone, Name: f.Name, Size: f.Size, Bytes: f.Size, Sending: true})
		r.event(kermit.Event{Kind: kermit.FileSaved, Name: f.Name, Size: f.Size, Bytes: f.Size, Sending: true})
		sent = append(sent, f.Name)
	}
	for f := range fl.All {
		one(f)
	}
	for f := range fl.Late {
		one(f)
	}
	return sent, failed
}

// The bar's total ends at the bytes sent when the first entry of a name
// cannot be sent (a missing path, a dangling link) and the second, a
// real file, goes late: the total holds the first of a name alone, and
// the second's start replans it (review: it was counted twice, the bar
// ending at half).
func TestSendTotalCountsFirstOfAName(t *testing.T) {
	defer func(n int) { keepListed = n }(keepListed)
	for _, keep := range []int{50_000, 1} {
		t.Run(fmt.Sprint("keepListed ", keep), func(t *testing.T) {
			keepListed = keep
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "x"), bytes.Repeat([]byte{1}, 1000), 0o644)
			l, err := listLocal([]string{filepath.Join(dir, "missing", "x"), filepath.Join(dir, "x")}, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			// As newSendReporter(c, local.bytes).
			r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}, planned: map[string]int64{}, total: l.bytes}
			sendAsEngine(t, r, l.list(r.listed))
			if r.done != 1000 || r.total != r.done {
				t.Errorf("done %d bytes of a total of %d; want 1000 of 1000", r.done, r.total)
			}
		})
	}
	t.Run("newReporter of a list (serial send)", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "x"), bytes.Repeat([]byte{1}, 1000), 0o644)
		files, _, _, err := localFiles([]string{filepath.Join(dir, "missing", "x"), filepath.Join(dir, "x")}, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := newReporter(cli.NewContext(cli.NewApp(), flag.NewFlagSet("x", 0), nil), files)
		r.out = io.Discard
		sendAsEngine(t, r, kermit.ListOf(files))
		if r.done != 1000 || r.total != r.done {
			t.Errorf("done %d bytes of a total of %d; want 1000 of 1000", r.done, r.total)
		}
	})
}

// Past keepListed the tree is walked again as it is sent, and a tree
// changed in between is sent as it is then: a second file of a name in
// the first walk whose first is gone by the second is the first of its
// name, sent, and not also failed as "same name as" the gone one
// (review: the first walk's stub was sent too).
func TestWalkedAgainDecidesSecondsAsItGoes(t *testing.T) {
	defer func(n int) { keepListed = n }(keepListed)
	keepListed = 1
	dir := t.TempDir()
	for _, p := range []string{"a/sub/x", "b/sub/x"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644)
	}
	l, err := listLocal([]string{filepath.Join(dir, "a") + "/.", filepath.Join(dir, "b") + "/."}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "a/sub/x")) // changed before it is sent
	r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}, planned: map[string]int64{}, total: l.bytes}
	sent, failed := sendAsEngine(t, r, l.list(r.listed))
	if len(sent) == 1 && len(failed) > 0 {
		t.Errorf("sub/x sent (b's) and also failed as a second file of its name: sent %v, failed %v", sent, failed)
	}
}

// A second file of a name that appears between the walks (a file added
// under a top two paths share) goes late, not in All, where with
// several sessions it would be handed out beside the first of its name
// (review).
func TestWalkedAgainNewSecondGoesLate(t *testing.T) {
	defer func(n int) { keepListed = n }(keepListed)
	keepListed = 1
	dir := t.TempDir()
	for _, p := range []string{"a/sub/x", "b/sub/y"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644)
	}
	l, err := listLocal([]string{filepath.Join(dir, "a") + "/.", filepath.Join(dir, "b") + "/."}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a/sub/y"), []byte("new"), 0o644) // added before it is sent
	fl := l.list(nil)
	for f := range fl.All {
		if f.Dir {
			continue
		}
		if _, err := f.Open(); err != nil {
			t.Errorf("All yields %s, which cannot be sent (%v): a second file of a name outside Late", f.Name, err)
		}
	}
}

// An interrupted send of a tree walked again does not walk the rest of
// it to name each file not begun: the walk stops, and what it did not
// reach is counted (notWalked).
func TestWalkedAgainStopsWhenInterrupted(t *testing.T) {
	defer func(n int) { keepListed = n }(keepListed)
	keepListed = 1
	dir := t.TempDir()
	for i := range 30 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), []byte("x"), 0o644)
	}
	l, err := listLocal([]string{dir}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.ctx = ctx
	n := 0
	for f := range l.list(nil).All {
		if !f.Dir {
			n++
		}
		if n == 10 {
			cancel()
		}
	}
	if n != 10 || l.notWalked() != 20 {
		t.Errorf("%d files walked after the interruption at the 10th, %d counted not walked; want 10 and 20", n, l.notWalked())
	}
	l.ctx, l.stoppedEarly, l.pulled = nil, false, 0
	n = 0
	for f := range l.list(nil).All {
		if !f.Dir {
			n++
		}
	}
	if n != 30 || l.notWalked() != 0 {
		t.Errorf("uninterrupted: %d files, %d not walked; want 30 and 0", n, l.notWalked())
	}
}

// An interrupted send of a tree walked again names what it took from All
// and, once All is done, the second files of a name its walk found
// (Late, named not begun or sent); notWalked must count only what is
// left: taken + named late + notWalked == the files the first walk
// counted (review: the seconds found before the stop were counted
// twice).
func TestWalkedAgainInterruptedCountsEachFileOnce(t *testing.T) {
	defer func(n int) { keepListed = n }(keepListed)
	keepListed = 1
	dir := t.TempDir()
	for _, tree := range []string{"a", "b"} {
		os.MkdirAll(filepath.Join(dir, tree, "sub"), 0o755)
		for i := range 10 {
			os.WriteFile(filepath.Join(dir, tree, "sub", fmt.Sprintf("f%02d", i)), []byte("x"), 0o644)
		}
	}
	for i := range 10 { // b's own files, after its seconds in the walk
		os.WriteFile(filepath.Join(dir, "b", "sub", fmt.Sprintf("g%02d", i)), []byte("x"), 0o644)
	}
	l, err := listLocal([]string{filepath.Join(dir, "a") + "/.", filepath.Join(dir, "b") + "/."}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.regular != 30 {
		t.Fatalf("regular %d, want 30", l.regular)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.ctx = ctx
	fl := l.list(nil)
	taken := 0
	for f := range fl.All { // as the sessions and rest pull it
		if f.Dir {
			continue
		}
		taken++
		if taken == 15 { // sub/f00..f09 of a, then sub/g00..g04 of b
			cancel()
		}
	}
	late := 0
	for range fl.Late { // read once All is used up: named not begun
		late++
	}
	if taken+late+l.notWalked() != l.regular {
		t.Errorf("taken %d + named late %d + counted not walked %d = %d; want the %d files listed (the %d seconds found are named and counted)",
			taken, late, l.notWalked(), taken+late+l.notWalked(), l.regular, late)
	}
}

// Unsized, the walk leaves a tree's regular files to their opens (no
// details, StatAtOpen); files named on the command line, links to files
// and directories keep theirs. Sized, every file has its size.
func TestWalkUnsizedLeavesFilesToTheirOpens(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tree", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "tree", "sub", "a"), make([]byte, 100), 0o644)
	os.WriteFile(filepath.Join(dir, "tree", "b"), make([]byte, 200), 0o644)
	os.Symlink("b", filepath.Join(dir, "tree", "link"))
	os.WriteFile(filepath.Join(dir, "named"), make([]byte, 300), 0o644)
	args := []string{filepath.Join(dir, "tree"), filepath.Join(dir, "named")}
	for _, sized := range []bool{true, false} {
		l, err := listLocalSized(args, true, kermit.Exclusions{}, sized)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{"tree/sub/a": 100, "tree/b": 200, "tree/link": 200, "named": 300}
		if !sized {
			want["tree/sub/a"], want["tree/b"] = -1, -1
		}
		for _, f := range l.all() {
			if f.Dir {
				if f.ModTime.IsZero() {
					t.Errorf("sized=%v: directory %s has no time", sized, f.Name)
				}
				continue
			}
			w, ok := want[f.Name]
			if !ok || f.Size != w || f.StatAtOpen != (w < 0) {
				t.Errorf("sized=%v: %s size %d StatAtOpen %v, want %d", sized, f.Name, f.Size, f.StatAtOpen, w)
			}
			delete(want, f.Name)
		}
		if len(want) > 0 {
			t.Errorf("sized=%v: not listed: %v", sized, want)
		}
	}
}

// A send's list holds each name once: the second file of a name (two
// paths giving one top) goes Late, whether or not the names had to be
// looked up (one tree needs no lookup: kermit.ListOfUnique).
func TestListSecondsGoLate(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"t1/a", "t1/s/b", "t2/a", "t2/s/c"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644)
	}
	for _, tc := range []struct {
		args      []string
		all, late []string
	}{
		{[]string{"t1"}, []string{"t1", "t1/a", "t1/s", "t1/s/b"}, nil},
		{[]string{"t1", "t2"}, []string{"t1", "t1/a", "t1/s", "t1/s/b", "t2", "t2/a", "t2/s", "t2/s/c"}, nil},
		{[]string{"t1/.", "t2/."}, []string{"a", "s", "s/b", "s", "s/c"}, []string{"a"}},
	} {
		var args []string
		for _, a := range tc.args {
			args = append(args, dir+"/"+a)
		}
		l, err := listLocalSized(args, true, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		fl := l.list(nil)
		var all, late []string
		for f := range fl.All {
			all = append(all, f.Name)
		}
		for f := range fl.Late {
			late = append(late, f.Name)
		}
		if !slices.Equal(all, tc.all) || !slices.Equal(late, tc.late) {
			t.Errorf("%q: all %q, late %q; want %q, %q", tc.args, all, late, tc.all, tc.late)
		}
	}
}

// A file named twice on the command line (send f f, or f and ./f, or a
// tree and the same tree with a slash) is sent once, as get takes a
// name given twice, not failed as a second file of its name (QA: exit
// 4); two files of one name from different paths still are.
func TestSameFileNamedTwiceSentOnce(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"f", "t/x", "other/f"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644)
	}
	f, t1 := filepath.Join(dir, "f"), filepath.Join(dir, "t")
	for _, tc := range []struct {
		args       []string
		sent, fail int
	}{
		{[]string{f, f}, 1, 0},
		{[]string{f, dir + "/./f"}, 1, 0},
		{[]string{t1, t1 + "/"}, 1, 0},
		{[]string{f, filepath.Join(dir, "other/f")}, 1, 1},
	} {
		l, err := listLocal(tc.args, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := &reporter{out: io.Discard, start: time.Now(), current: map[string]int64{}, planned: map[string]int64{}, total: l.bytes}
		sent, failed := sendAsEngine(t, r, l.list(r.listed))
		var files []string
		for _, s := range sent {
			if !strings.HasSuffix(s, "/") && s != "t" {
				files = append(files, s)
			}
		}
		if len(files) != tc.sent || len(failed) != tc.fail {
			t.Errorf("%q: sent %q, failed %q; want %d sent, %d failed", tc.args, sent, failed, tc.sent, tc.fail)
		}
	}
}
