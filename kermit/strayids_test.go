package kermit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
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
			second := make([]kermit.OutgoingFile, 3)
			want := map[string][]byte{}
			for j := range second {
				name := fmt.Sprintf("g%d", j)
				want[name] = randomBytes(3000+j, int64(100+j))
				p := filepath.Join(src, name)
				os.WriteFile(p, want[name], 0o644)
				second[j] = kermit.OutgoingFile{Name: name, Size: int64(len(want[name])), Open: func() (kermit.FileReader, error) { return os.Open(p) }}
			}
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
			for name, b := range want {
				got, err := os.ReadFile(filepath.Join(dst, name))
				if err != nil {
					t.Errorf("%s: %v", name, err)
				} else if !bytes.Equal(got, b) {
					t.Errorf("%s stored with other data than its own", name)
				}
			}
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
