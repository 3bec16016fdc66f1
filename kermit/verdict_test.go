package kermit_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"kerf/filestore"
	"kerf/kermit"
)

// noRoomStore refuses, at the A packet, any file over limit bytes, as a
// receiver whose disk lacks the room does.
type noRoomStore struct {
	*filestore.Dir
	limit int64
}

type noRoomFile struct {
	kermit.Incoming
	limit int64
}

func (s noRoomStore) Create(name string) (kermit.Incoming, error) {
	inc, err := s.Dir.Create(name)
	if err != nil {
		return nil, err
	}
	return noRoomFile{inc, s.limit}, nil
}

func (f noRoomFile) Room(n int64) error {
	if n > f.limit {
		return fmt.Errorf("needs %d bytes, %d are free", n, f.limit)
	}
	return nil
}

// In dual-channel mode a big file waits for the receiver's verdict on
// its attributes before its data: one refused (no room) sends none of
// its bytes, where it used to cross the link whole to be thrown away. A
// small one still goes without waiting, and both are reported.
func TestRefusedBigFileSendsNoData(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	files := writeFiles(t, src, []testFile{{"big.bin", randomBytes(4<<20, 1)}, {"small.bin", randomBytes(3000, 2)}, {"ok.bin", randomBytes(2<<20, 3)}})
	var mu sync.Mutex
	moved := map[string]int64{}
	var got fileEndings
	scfg := kermit.WithVerdictSize(kermit.DefaultConfig(), 1<<20)
	scfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileProgress {
			mu.Lock()
			moved[e.Name] = max(moved[e.Name], e.Bytes)
			mu.Unlock()
		}
		got.note(e)
	}
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// big.bin is refused; small.bin too, but after its data went.
	limits := noRoomStore{dir, 2 << 20}
	_, serr, rerr := dualTransferTo(t, scfg, kermit.DefaultConfig(), []kermit.OutgoingFile{files[0], files[1], files[2]}, smallRefused{limits})
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 2 || rerr != nil {
		t.Fatalf("send %v (want big.bin and small.bin failed), receive %v", serr, rerr)
	}
	mu.Lock()
	defer mu.Unlock()
	if moved["big.bin"] != 0 {
		t.Errorf("%d bytes of the refused big file were sent", moved["big.bin"])
	}
	if moved["ok.bin"] != 2<<20 {
		t.Errorf("ok.bin: %d bytes sent, want all", moved["ok.bin"])
	}
	for _, n := range []string{"big.bin", "small.bin"} {
		if e := got.of(n); e.Kind != kermit.FileSkipped || e.Err == nil {
			t.Errorf("%s: %+v; want refused", n, e)
		}
	}
	checkFiles(t, dst, []testFile{{"ok.bin", randomBytes(2<<20, 3)}})
}

// smallRefused refuses small.bin for room too (a limit below its size),
// so that a refusal of a file that did not wait is seen as well.
type smallRefused struct{ noRoomStore }

func (s smallRefused) Create(name string) (kermit.Incoming, error) {
	if name == "small.bin" {
		inc, err := s.Dir.Create(name)
		if err != nil {
			return nil, err
		}
		return noRoomFile{inc, 100}, nil
	}
	return s.noRoomStore.Create(name)
}
