package datachan

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// Blocks under a file id the receiver has settled without expecting it
// (a peer that counted its ids otherwise, QA am) fail the Path with an
// error that says so, whether they were parked before the settling or
// come after it, rather than wait unclaimed for ever.
func TestStrayBlocksFailThePath(t *testing.T) {
	for _, parkedFirst := range []bool{true, false} {
		s, r := pathPair(t, 2, nil, WithBlockSize(4096))
		ctx := testContext(t)
		data := randomData(1, 10_000)
		if !parkedFirst {
			if err := r.SettleBelow(3); err != nil {
				t.Fatal(err)
			}
		}
		go s.SendFile(ctx, 1, bytes.NewReader(data), 0, int64(len(data)))
		if parkedFirst {
			// Parked (not expected yet), then settled past.
			deadline := time.Now().Add(10 * time.Second)
			for r.Stats().Parked == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			err := r.SettleBelow(3)
			if err == nil || !strings.Contains(err.Error(), "file id 1") {
				t.Errorf("settling past parked blocks of file 1: %v", err)
			}
			continue
		}
		select {
		case <-r.Failed():
			if err := r.Err(); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "file id 1") {
				t.Errorf("stray blocks after the settling: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("stray blocks after the settling: the Path waits on")
		}
	}
}

// A file settled past and expected (as the engine expects every file it
// takes, in order) is no stray: its blocks arrive.
func TestSettledFileStillArrives(t *testing.T) {
	s, r := pathPair(t, 2, nil, WithBlockSize(4096))
	ctx := testContext(t)
	data := randomData(2, 10_000)
	dst := newMemFile(len(data))
	if err := r.SettleBelow(1); err != nil {
		t.Fatal(err)
	}
	if err := r.Expect(1, dst, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	go s.SendFile(ctx, 1, bytes.NewReader(data), 0, int64(len(data)))
	if _, err := r.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.SettleBelow(2); err != nil {
		t.Errorf("settling past a file received: %v", err)
	}
	if !bytes.Equal(dst.bytes(), data) {
		t.Error("file 1 differs")
	}
}

// A file forsaken (its F read outside a transfer) loses its blocks,
// parked before or come after, and is no stray to SettleBelow; the
// next file, expected, gets its own. Its park room is given back.
func TestForsakenFileDropsItsBlocks(t *testing.T) {
	for _, parkedFirst := range []bool{true, false} {
		s, r := pathPair(t, 2, nil, WithBlockSize(4096))
		ctx := testContext(t)
		stray, data := randomData(3, 10_000), randomData(4, 10_000)
		if !parkedFirst {
			r.Forsake(1)
		}
		if _, err := s.SendFile(ctx, 1, bytes.NewReader(stray), 0, int64(len(stray))); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		// All of file 1 come (parked, or dropped) before file 2 is sent.
		deadline := time.Now().Add(10 * time.Second)
		for st := r.Stats(); st.Parked+st.Duplicates < 3 && time.Now().Before(deadline); st = r.Stats() {
			time.Sleep(5 * time.Millisecond)
		}
		if parkedFirst {
			r.Forsake(1)
		}
		if err := r.SettleBelow(2); err != nil {
			t.Errorf("settling past a forsaken file: %v", err)
		}
		if p, _ := EarlyBlocks(); parkedFirst && p == 0 {
			t.Error("no block of file 1 was parked")
		}
		dst := newMemFile(len(data))
		if err := r.Expect(2, dst, 0, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		go s.SendFile(ctx, 2, bytes.NewReader(data), 0, int64(len(data)))
		if _, err := r.Wait(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst.bytes(), data) {
			t.Error("file 2 differs")
		}
		r.mu.Lock()
		parked := r.parkedBytes
		r.mu.Unlock()
		if parked != 0 {
			t.Errorf("%d bytes still parked", parked)
		}
		if err := r.Expect(1, newMemFile(0), 0, 0); err == nil {
			t.Error("a forsaken file was taken as expected")
		}
	}
}
