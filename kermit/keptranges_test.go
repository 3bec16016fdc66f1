package kermit_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"kerf/datachan"
	"kerf/filestore"
	"kerf/kermit"
)

// keptPartial leaves in dst the partial of name a receiver keeps after
// an interruption in which the blocks of gaps never came (a stalled
// data connection): data elsewhere, ranges recorded (KeepRanges).
func keptPartial(t *testing.T, dst, name string, data []byte, prefix int64, kept [][2]int64) {
	t.Helper()
	d, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, err := d.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Truncate(0); err != nil {
		t.Fatal(err)
	}
	for _, r := range append([][2]int64{{0, prefix}}, kept...) {
		if _, err := in.WriteAt(data[r[0]:r[1]], r[0]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.(kermit.KeptPartial).KeepRanges(prefix, kept); err != nil {
		t.Fatal(err)
	}
	if err := in.Abort(true); err != nil {
		t.Fatal(err)
	}
}

// A resume sends only what the partial lacks: its prefix and the
// ranges it kept past it are not sent again (capas4KeptRanges). With a
// kerf from before that, or a range that is not of the file as it is
// now, the file still arrives whole and right.
func TestDualResumeSendsOnlyTheGaps(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testDualResumeSendsOnlyTheGaps(t, randomBytes(8<<20, 11)) })
	// Compressed blocks stand for file ranges as plain ones do (text
	// that compresses: each block goes compressed).
	defer func(o []datachan.Option) { dualOpts = o }(dualOpts)
	dualOpts = []datachan.Option{datachan.WithCompression(true)}
	text := bytes.Repeat([]byte("kerf keeps what came past the gap. "), 8<<20/35+1)[:8<<20]
	t.Run("compressed", func(t *testing.T) { testDualResumeSendsOnlyTheGaps(t, text) })
}

func testDualResumeSendsOnlyTheGaps(t *testing.T, data []byte) {
	const mib = 1 << 20
	kept := [][2]int64{{3 * mib, 5 * mib}, {6 * mib, 7 * mib}}
	for _, tc := range []struct {
		name      string
		prefix    int64
		old       func(kermit.Config) kermit.Config // applied to one side
		oldSender bool
		damage    bool // a kept range differs from the file
		wantBytes int64
		wantKept  int64 // FileDone's Kept, both sides
	}{
		{name: "gaps", prefix: 2 * mib, wantBytes: 8*mib - 2*mib - 3*mib, wantKept: 3 * mib},
		// The first block never came: no prefix, ranges all the same.
		{name: "no-prefix", wantBytes: 8*mib - 3*mib, wantKept: 3 * mib},
		{name: "old-receiver", prefix: 2 * mib, old: kermit.WithoutKeptRanges, wantBytes: 8*mib - 2*mib},
		{name: "old-sender", prefix: 2 * mib, old: kermit.WithoutKeptRanges, oldSender: true, wantBytes: 8*mib - 2*mib},
		{name: "changed", prefix: 2 * mib, damage: true, wantBytes: 8 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"big.bin", data}})
			there := data
			if tc.damage {
				there = append([]byte(nil), data...)
				there[6*mib+5] ^= 0x40
			}
			keptPartial(t, dst, "big.bin", there, tc.prefix, kept)
			scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
			scfg.Resume = true
			var mu sync.Mutex
			done := map[bool]kermit.Event{}
			for _, cfg := range []*kermit.Config{&scfg, &rcfg} {
				cfg.Events = func(e kermit.Event) {
					if e.Kind == kermit.FileDone {
						mu.Lock()
						done[e.Sending] = e
						mu.Unlock()
					}
				}
			}
			if tc.old != nil {
				if tc.oldSender {
					scfg = tc.old(scfg)
				} else {
					rcfg = tc.old(rcfg)
				}
			}
			st, serr, rerr := dualTransfer(t, scfg, rcfg, out, dst)
			if serr != nil || rerr != nil {
				t.Fatalf("send %v, receive %v", serr, rerr)
			}
			checkFiles(t, dst, []testFile{{"big.bin", data}})
			if st.FileBytes != tc.wantBytes || st.BytesSent != tc.wantBytes {
				t.Errorf("sent %d bytes (files done: %d), want %d", st.FileBytes, st.BytesSent, tc.wantBytes)
			}
			mu.Lock()
			for sending, e := range done {
				if e.Kept != tc.wantKept || e.Bytes != e.Size-e.Offset {
					t.Errorf("FileDone (sending %v): bytes %d, kept %d, offset %d; want kept %d, bytes to the end", sending, e.Bytes, e.Kept, e.Offset, tc.wantKept)
				}
			}
			if len(done) != 2 {
				t.Errorf("FileDone told by %d sides", len(done))
			}
			mu.Unlock()
			if _, err := os.Stat(filepath.Join(dst, ".big.bin"+filestore.PartSuffix)); !os.IsNotExist(err) {
				t.Errorf("partial left behind: %v", err)
			}
		})
	}
}

// roomStore is a filestore whose files say there is room for free
// bytes (RoomChecker), whatever the disk has.
type roomStore struct {
	*filestore.Dir
	free int64
}

type roomIncoming struct {
	kermit.Incoming
	kermit.KeptPartial
	free int64
}

func (s roomStore) Create(name string) (kermit.Incoming, error) {
	in, err := s.Dir.Create(name)
	if err != nil {
		return nil, err
	}
	return roomIncoming{in, in.(kermit.KeptPartial), s.free}, nil
}

func (r roomIncoming) Room(n int64) error {
	if n > r.free {
		return fmt.Errorf("needs %d bytes, %d free", n, r.free)
	}
	return nil
}

// The room a resume needs leaves out the ranges kept (on the disk
// already), and a resume refused for room keeps them, with or without a
// prefix (review 51: the whole rest was asked for, and a partial with
// no prefix was removed with its ranges).
func TestDualResumeRoomLeavesOutTheKeptRanges(t *testing.T) {
	const mib = 1 << 20
	data := randomBytes(8*mib, 12)
	kept := [][2]int64{{3 * mib, 5 * mib}, {6 * mib, 7 * mib}}
	for _, prefix := range []int64{0, mib} {
		for _, free := range []int64{8*mib - prefix - 3*mib, 8*mib - prefix - 3*mib - 1} {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"big.bin", data}})
			keptPartial(t, dst, "big.bin", data, prefix, kept)
			d, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			scfg := kermit.DefaultConfig()
			scfg.Resume = true
			st, serr, rerr := dualTransferTo(t, scfg, kermit.DefaultConfig(), out, roomStore{d, free})
			d.Close()
			fits := free == 8*mib-prefix-3*mib
			if fits {
				if serr != nil || rerr != nil || st.FileBytes != free {
					t.Errorf("prefix %d, room for the gaps: send %v, receive %v, sent %d (want %d)", prefix, serr, rerr, st.FileBytes, free)
				}
				checkFiles(t, dst, []testFile{{"big.bin", data}})
				continue
			}
			if serr == nil {
				t.Errorf("prefix %d, a byte short: the send did not fail", prefix)
			}
			if fi, err := os.Stat(filepath.Join(dst, ".big.bin"+filestore.PartSuffix)); err != nil || fi.Size() != 7*mib {
				t.Errorf("prefix %d, refused for room: partial %v, %v; want it kept, 7 MiB", prefix, fi, err)
			}
		}
	}
}
