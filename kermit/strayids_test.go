package kermit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A group the receiver ends with an E in its middle leaves the files its
// sender sent ahead (their F packets, their blocks) on the way, to be
// read by the receiver outside a transfer: before the next group's S,
// or in a server's command wait. The next group on the session gets its
// own files' data all the same: the receiver counts those F packets as
// the sender did, and drops their blocks. (Review 56b: counted only in
// a transfer, the receiver's file ids fell behind the sender's, and the
// next group's files took the blocks parked for the strays.)
func TestGroupAfterStraysGetsItsOwnBlocks(t *testing.T) {
	for _, serving := range []bool{false, true} {
		t.Run(map[bool]string{false: "receiving", true: "serving"}[serving], func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			first := numberedFiles(src, "f%d", 3, 3000)
			// g0 has a stray's size, other bytes: a block taken for the
			// wrong file fits it.
			second, want := ownFiles(src, 3000, 3001, 3002)
			scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
			scfg.Reliable, rcfg.Reliable = true, true
			send, recv := dualSessions(t, scfg, rcfg, nil)
			dir, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dir.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			rerrs, done := make(chan error, 10), make(chan struct{})
			t.Cleanup(func() { cancel(); <-done }) // before the store closes
			go func() {
				defer close(done)
				if serving {
					rerrs <- recv.Serve(ctx, dir)
					return
				}
				for ctx.Err() == nil {
					err := recv.Receive(ctx, dir)
					rerrs <- err
					if errors.As(err, new(*kermit.LinkError)) {
						return
					}
				}
			}()
			if err := send.Send(ctx, first); err != nil {
				t.Fatalf("first group: %v", err)
			}
			for j := range 2 {
				if err := kermit.SendStray(ctx, send, fmt.Sprintf("stray%d", j), randomBytes(3000+j, int64(200+j))); err != nil {
					t.Fatal(err)
				}
			}
			if err := send.Send(ctx, second); err != nil {
				t.Errorf("second group: %v", err)
			}
			checkOwn(t, dst, want)
			for _, name := range []string{"stray0", "stray1"} {
				if _, err := os.Stat(filepath.Join(dst, name)); err == nil {
					t.Errorf("%s, read outside a transfer, was stored", name)
				}
			}
			if serving {
				return // (the server waits on the link, which the test's end closes)
			}
			for range 2 { // the two groups
				if err := <-rerrs; err != nil {
					t.Errorf("receiver: %v", err)
				}
			}
		})
	}
}

// nthFTwice has the nth F packet written to conn written twice: what a
// sender whose timer ran out does (a third-party dual sender over TCP;
// protocol.md §7).
func nthFTwice(conn net.Conn, nth int) net.Conn {
	seen := 0
	return &rewritingConn{Conn: conn, twice: func(p framing.Packet) bool {
		if p.Type == 'F' {
			seen++
			return seen == nth
		}
		return false
	}}
}

// A copy of an F (a resend), dropped by the receive window, takes no file
// id of its own: the files after it get their own blocks. (Review 57: the
// reader counted the copy, and the group stalled with every file
// missing.)
func TestCopyOfAnFCountsOnce(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files, want := ownFiles(src, 3000, 3000, 3000, 3000) // one size: a block taken for another file fits
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Reliable, rcfg.Reliable = true, true
	a, b := link(t, 0, 1)
	da, db := dualPair(t)
	scfg.Dual, rcfg.Dual = da, db
	scfg.Streaming, rcfg.Streaming = true, true
	send, recv := kermit.NewSession(nthFTwice(a, 2), scfg), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	t.Cleanup(func() { cancel(); <-done })
	go func() { done <- recv.Receive(ctx, dir) }()
	if err := send.Send(ctx, files); err != nil {
		t.Errorf("send: %v", err)
	}
	checkOwn(t, dst, want)
}

// ownFiles writes files g0, g1, ... of the sizes given to src, each of
// bytes of its own, and returns them to send and their contents by name.
func ownFiles(src string, sizes ...int) ([]kermit.OutgoingFile, map[string][]byte) {
	files := make([]kermit.OutgoingFile, len(sizes))
	want := map[string][]byte{}
	for j, size := range sizes {
		name := fmt.Sprintf("g%d", j)
		want[name] = randomBytes(size, int64(100+j))
		p := filepath.Join(src, name)
		os.WriteFile(p, want[name], 0o644)
		files[j] = kermit.OutgoingFile{Name: name, Size: int64(size), Open: func() (kermit.FileReader, error) { return os.Open(p) }}
	}
	return files, want
}

// checkOwn checks that dst holds each file of want with its own bytes.
func checkOwn(t *testing.T, dst string, want map[string][]byte) {
	t.Helper()
	for name, b := range want {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !bytes.Equal(got, b) {
			t.Errorf("%s stored with other data than its own", name)
		}
	}
}
