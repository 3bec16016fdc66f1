package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// reconnectFiles writes n files of about size bytes under src and
// returns them to send, and their names.
func reconnectFiles(t *testing.T, src string, n, size int) ([]kermit.OutgoingFile, []string) {
	t.Helper()
	var out []kermit.OutgoingFile
	var names []string
	for j := range n {
		p := filepath.Join(src, fmt.Sprint(j))
		if err := os.WriteFile(p, randomBytes(size+j, int64(j)), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		name := fmt.Sprintf("f%02d", j)
		out = append(out, kermit.OutgoingFile{Name: name, Size: fi.Size(), ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
		names = append(names, name)
	}
	return out, names
}

// A send whose every session is lost goes on over a successor
// (Reconnect): each file arrives whole and is told done once and saved
// once, and the send succeeds. One session: the successor sends the file
// cut off again, resuming, and those not begun; two, both lost: one
// successor sends what both were cut off in and the rest.
func TestSendReconnects(t *testing.T) {
	for _, cutAt := range [][]int{{4}, {3, 5}} {
		t.Run(fmt.Sprintf("%d sessions", len(cutAt)), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out, names := reconnectFiles(t, src, 40, 200_000)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var ended endLog
			var told doneSaved
			events := func(e kermit.Event) { ended.note(e); told.note(e) }
			cuts := make([]*cutConn, len(cutAt))
			senders, wait := sendClients(t, ctx, dst, len(cutAt), events, func(i int, a net.Conn, cfg *kermit.Config) net.Conn {
				cuts[i], cfg.Events = cutAtFileStart(a, cutAt[i], events)
				return cuts[i]
			})
			var dials atomic.Int32
			var waits []func()
			rc := &kermit.Reconnect{Tries: 3, Wait: time.Millisecond, Dial: func(context.Context) (*kermit.Session, error) {
				dials.Add(1)
				s, w := sendClients(t, ctx, dst, 1, events, nil)
				waits = append(waits, w)
				return s[0], nil
			}}
			err := kermit.SendParallelWith(ctx, senders, kermit.ListOf(out), kermit.SendOptions{Reconnect: rc})
			cancel()
			wait()
			for _, w := range waits {
				w()
			}
			if err != nil {
				t.Fatalf("send with every session lost: %v, want a successor to finish it", err)
			}
			cutOnceDialled(t, cuts, &dials)
			for j, n := range names {
				want, _ := os.ReadFile(filepath.Join(src, fmt.Sprint(j)))
				if got, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(got) != string(want) {
					t.Errorf("%s: %d bytes, %v; want %d", n, len(got), err, len(want))
				}
			}
			for _, n := range names {
				if k := ended.ended[n]; len(k) != 1 || k[0] != kermit.FileDone {
					t.Errorf("%s ended %v, want done once", n, k)
				}
			}
			told.onceEach(t, names)
		})
	}
}

// A successor that cannot be dialled leaves the send failed as before,
// with the loss and the dials said, each file reported once (those no
// session began, not begun), after Tries dials.
func TestSendReconnectGivesUp(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out, names := reconnectFiles(t, src, 20, 50_000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ended endLog
	var cut *cutConn
	senders, wait := sendClients(t, ctx, dst, 1, ended.note, func(i int, a net.Conn, cfg *kermit.Config) net.Conn {
		cut, cfg.Events = cutAtFileStart(a, 3, ended.note)
		return cut
	})
	var dials atomic.Int32
	refused := errors.New("connection refused")
	rc := &kermit.Reconnect{Tries: 3, Wait: time.Millisecond, Dial: func(context.Context) (*kermit.Session, error) {
		dials.Add(1)
		return nil, refused
	}}
	err := kermit.SendParallelWith(ctx, senders, kermit.ListOf(out), kermit.SendOptions{Reconnect: rc})
	cancel()
	wait()
	if err == nil || !errors.Is(err, refused) || !strings.Contains(err.Error(), "3 tries") {
		t.Fatalf("error %v, want the loss with the 3 refused dials", err)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials, want 3", n)
	}
	ended.mu.Lock()
	defer ended.mu.Unlock()
	notBegun := 0
	for _, n := range names {
		if k := ended.ended[n]; len(k) != 1 {
			t.Errorf("%s ended %v, want once", n, k)
		}
		if errors.Is(ended.errs[n], kermit.ErrNotBegun) {
			notBegun++
		}
	}
	// (Cut at its third file's start, the session had queued a few
	// more ahead.)
	if notBegun < len(names)/2 {
		t.Errorf("%d files told not begun, want at least %d", notBegun, len(names)/2)
	}
}

// A GET whose every session is lost goes on over a successor, which
// asks for the lost one's files (its share) again, resuming: every file
// arrives, each told done once and saved once.
func TestGetReconnects(t *testing.T) {
	for _, cutAt := range [][]int{{3}, {3, 4}} {
		t.Run(fmt.Sprintf("%d sessions", len(cutAt)), func(t *testing.T) {
			root, dst := t.TempDir(), t.TempDir()
			names := writeTree(t, root, 40, 150_000)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var ended endLog
			var told doneSaved
			events := func(e kermit.Event) { ended.note(e); told.note(e) }
			clients, stores, cuts := getClients(t, ctx, root, dst, events, cutAt...)
			var dials atomic.Int32
			rc := &kermit.Reconnect{Tries: 3, Wait: time.Millisecond, Dial: func(context.Context) (*kermit.Session, error) {
				dials.Add(1)
				c, _, _ := getClients(t, ctx, root, dst, events, 0)
				return c[0], nil
			}}
			if err := kermit.GetParallel(ctx, clients, "tree", kermit.GetOptions{Recursive: true, Reconnect: rc}, stores); err != nil {
				t.Fatalf("GET with every session lost: %v, want a successor to finish it", err)
			}
			cutOnceDialled(t, cuts, &dials)
			ended.fetchedOnce(t, root, dst, names)
			told.onceEach(t, names)
		})
	}
}

// A receiver whose data path failed (a damaged block header) ends the
// session with an E, which can reach the sender before its own data
// connection is seen to close: the session is lost all the same, and a
// successor finishes the file.
func TestSendReconnectsAfterPeersDataFailure(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"f.bin", randomBytes(20<<20, 9)}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	pair := func(wrap func(net.Conn) net.Conn) *kermit.Session {
		send, recv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), wrap)
		go recv.Receive(ctx, store)
		return send
	}
	first := pair(damagedHeader)
	var dials atomic.Int32
	rc := &kermit.Reconnect{Tries: 2, Wait: time.Millisecond, Dial: func(context.Context) (*kermit.Session, error) {
		dials.Add(1)
		return pair(nil), nil
	}}
	if err := kermit.SendParallelWith(ctx, []*kermit.Session{first}, kermit.ListOf(out), kermit.SendOptions{Reconnect: rc}); err != nil {
		t.Fatalf("send after the receiver's data path failed: %v, want a successor to finish it", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d successors dialled, want 1", n)
	}
	checkFiles(t, dst, []testFile{{"f.bin", randomBytes(20<<20, 9)}})
}

// cutOnceDialled checks that every link of cuts was cut, and that one
// successor was dialled.
func cutOnceDialled(t *testing.T, cuts []*cutConn, dials *atomic.Int32) {
	t.Helper()
	for i, c := range cuts {
		if c.n.Load() >= 0 {
			t.Fatalf("session %d's link was not cut: the test tested nothing", i)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d successors dialled, want 1", n)
	}
}
