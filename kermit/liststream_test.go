package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// pacedLister lists n made-up entries (and with problems, a problem line
// half-way) and, half-way through, waits until the client has been
// handed an entry: a listing held whole on either side until it ends
// never gets there.
type pacedLister struct {
	*filestore.Dir
	n    int
	seen chan struct{}
}

func (p *pacedLister) write(w io.Writer, problem, ino, foreign bool) error {
	var line []byte
	for i := range p.n {
		if i == p.n/4 && foreign {
			// A line not in kerf's form (a newer server's): passed on
			// as it came, the rest still read.
			if _, err := io.WriteString(w, "a line of another form\n"); err != nil {
				return err
			}
		}
		if i == p.n/2 {
			if problem {
				line = framing.AppendListingProblem(line[:0], framing.ListingProblem{Name: "locked", Cause: "permission denied"})
				if _, err := w.Write(line); err != nil {
					return err
				}
			}
			select {
			case <-p.seen:
			case <-time.After(30 * time.Second):
				return errors.New("half-way through the listing, the client had been handed no entry")
			}
		}
		e := framing.ListingEntry{Mode: 0o644, Size: int64(i), ModTime: time.Unix(1e9+int64(i), 5), Name: fmt.Sprintf("entry-%06d", i)}
		if ino {
			e.Ino = uint64(i + 1)
			line = framing.AppendListingLineIno(line[:0], e)
		} else {
			line = framing.AppendListingLineExact(line[:0], e)
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

func (p *pacedLister) ListTo(spec string, form kermit.ListForm, w io.Writer) error {
	return p.write(w, false, false, true)
}

func (p *pacedLister) ListTree(spec string, form kermit.TreeForm, w io.Writer) error {
	return p.write(w, form.Problems, form.Ino, false)
}

// MatchEach yields n made-up files, as a GET of a tree would send them,
// waiting half-way as write does: a get listing (kerf-get) is made from
// them.
func (p *pacedLister) MatchEach(spec string, recursive bool, keep func(string) bool, yield func(kermit.OutgoingFile) bool) (int, error) {
	for i := range p.n {
		if i == p.n/2 {
			select {
			case <-p.seen:
			case <-time.After(30 * time.Second):
				return 0, errors.New("half-way through the files, the client had been handed no entry")
			}
		}
		f := kermit.OutgoingFile{Name: fmt.Sprintf("entry-%06d", i), Size: int64(i), ModTime: time.Unix(1e9+int64(i), 5), Mode: 0o644,
			Open: func() (kermit.FileReader, error) { return nil, errors.New("not for sending") }}
		if !yield(f) {
			break
		}
	}
	return 0, nil
}

// servedLister serves fs (one of the listers below, over an empty tree)
// to a client in dual-channel mode for the test's length.
func servedLister(t *testing.T, fs kermit.ServerFS) (*kermit.Session, context.Context) {
	t.Helper()
	cli, srv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	go srv.Serve(ctx, fs)
	return cli, ctx
}

// emptyTree is a tree for a lister's other ServerFS methods.
func emptyTree(t *testing.T) *filestore.Dir {
	t.Helper()
	dir, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir
}

// A listing comes to the client's hands as it is made, entry by entry,
// on both sides (QA w: ls of 500,000 entries held the listing whole on
// the server and on the client, 300 MB each, and printed nothing until
// it had all come); ls -R's problem lines come with it.
func TestListingsStreamToTheClient(t *testing.T) {
	dir := emptyTree(t)
	const n = 20000 // some 40 packets
	for _, kind := range []string{"ls", "tree", "get"} {
		tree := kind == "tree"
		t.Run(kind, func(t *testing.T) {
			fs := &pacedLister{Dir: dir, n: n, seen: make(chan struct{})}
			cli, ctx := servedLister(t, fs)
			var once sync.Once
			got := 0
			entry := func(e framing.ListingEntry) error {
				if want := fmt.Sprintf("entry-%06d", got); e.Name != want || e.Size != int64(got) || e.ModTime.Nanosecond() != 5 {
					return fmt.Errorf("entry %d: %+v, want %s", got, e, want)
				}
				got++
				once.Do(func() { close(fs.seen) })
				return nil
			}
			var problems []framing.ListingProblem
			var err error
			if kind == "get" {
				// What a resuming get compares with its files.
				err = cli.GetListingEach(ctx, "x", true, entry)
			} else if tree {
				err = cli.ListTreeEach(ctx, "x", entry, func(p framing.ListingProblem) error {
					problems = append(problems, p)
					return nil
				})
			} else {
				var text string
				var others []string
				text, err = cli.ListExactEach(ctx, "x", entry, func(line string) error {
					others = append(others, line)
					return nil
				})
				if text != "" {
					t.Errorf("a kerf server's listing came back as text: %.80q", text)
				}
				if len(others) != 1 || others[0] != "a line of another form" {
					t.Errorf("lines not in kerf's form: %q, want the one", others)
				}
			}
			if err != nil || got != n {
				t.Fatalf("%d entries, %v; want %d", got, err, n)
			}
			if tree && (len(problems) != 1 || problems[0].Name != "locked") {
				t.Errorf("problems %+v, want the one", problems)
			}
		})
	}
}

// A listing whose context ends part-way ends there, with the context's
// error, however fast its lines keep coming: the entries stop (QA x:
// Ctrl-C on ls to a slow terminal printed the listing to its end and
// exited 0).
func TestListingEndsWithItsContext(t *testing.T) {
	dir := emptyTree(t)
	const n = 20000
	for _, tree := range []bool{false, true} {
		t.Run(fmt.Sprintf("tree=%v", tree), func(t *testing.T) {
			fs := &pacedLister{Dir: dir, n: n, seen: make(chan struct{})}
			close(fs.seen) // no waiting half-way
			cli, sctx := servedLister(t, fs)
			ctx, cancel := context.WithCancel(sctx)
			got, after := 0, 0
			entry := func(e framing.ListingEntry) error {
				if ctx.Err() != nil {
					after++
				}
				if got++; got == 100 {
					cancel()
				}
				return nil
			}
			var err error
			if tree {
				err = cli.ListTreeEach(ctx, "x", entry, func(framing.ListingProblem) error { return nil })
			} else {
				_, err = cli.ListExactEach(ctx, "x", entry, func(string) error { return nil })
			}
			if !errors.Is(err, context.Canceled) || after != 0 || got != 100 {
				t.Errorf("%d entries (%d after the end), %v; want 100 and context.Canceled", got, after, err)
			}
		})
	}
}

// failingLister lists pacedLister's entries and then fails.
type failingLister struct{ pacedLister }

func (f *failingLister) ListTo(spec string, form kermit.ListForm, w io.Writer) error {
	if err := f.write(w, false, false, false); err != nil {
		return err
	}
	return errors.New("the disk went away")
}

// A listing that fails part-way gives the client every line made before
// the failure, then the server's error (review 49: the lines in flight
// were dropped, 19,226 of 20,000 came).
func TestListingFailingPartWayKeepsItsLines(t *testing.T) {
	dir := emptyTree(t)
	const n = 20000
	fs := &failingLister{pacedLister{Dir: dir, n: n, seen: make(chan struct{})}}
	close(fs.seen)
	cli, ctx := servedLister(t, fs)
	got := 0
	_, err := cli.ListExactEach(ctx, "x", func(framing.ListingEntry) error { got++; return nil }, func(string) error { return nil })
	var pe *kermit.PeerError
	if got != n || !errors.As(err, &pe) || !strings.Contains(err.Error(), "the disk went away") {
		t.Errorf("%d entries, %v; want %d and the server's error", got, err, n)
	}
}
