package kermit_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"kerf/filestore"
	"kerf/kermit"
)

// hintStore records what the engine tells each file through
// kermit.SizeHinted before its data.
type hintStore struct {
	*filestore.Dir
	mu    sync.Mutex
	hints []string
}

type hintFile struct {
	kermit.Incoming
	s    *hintStore
	name string
}

func (s *hintStore) Create(name string) (kermit.Incoming, error) {
	inc, err := s.Dir.Create(name)
	if err != nil {
		return nil, err
	}
	return hintFile{inc, s, name}, nil
}

func (f hintFile) WillHold(size int64, resume bool) error {
	f.s.mu.Lock()
	f.s.hints = append(f.s.hints, fmt.Sprintf("%s %d %v", f.name, size, resume))
	f.s.mu.Unlock()
	return f.Incoming.(kermit.SizeHinted).WillHold(size, resume)
}

// The receiver tells its store each file's announced size, and whether
// the sender asks to resume, once the attributes are in and before the
// data (filestore then keeps small files unnamed): on both paths, and
// for an empty file too. The files arrive whole either way.
func TestStoreToldSizeBeforeData(t *testing.T) {
	for _, dual := range []bool{false, true} {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("dual=%v resume=%v", dual, resume), func(t *testing.T) {
				src, dst := t.TempDir(), t.TempDir()
				want := []testFile{{"empty", nil}, {"small", randomBytes(1000, 1)}, {"big", randomBytes(300<<10, 2)}}
				files := writeFiles(t, src, want)
				dir, err := filestore.Open(dst)
				if err != nil {
					t.Fatal(err)
				}
				defer dir.Close()
				dir.UnnamedMax = filestore.NetUnnamedMax
				store := &hintStore{Dir: dir}
				scfg := kermit.DefaultConfig()
				scfg.Resume = resume
				if serr, rerr := transferEither(t, dual, scfg, kermit.DefaultConfig(), files, store); serr != nil || rerr != nil {
					t.Fatalf("send %v, receive %v", serr, rerr)
				}
				var wantHints []string
				for _, f := range want {
					// A file under the verdict size goes whole on the
					// data path, resumed or not (sendFile): no resume
					// is asked for it.
					asked := resume && (!dual || f.name == "big")
					wantHints = append(wantHints, fmt.Sprintf("%s %d %v", f.name, len(f.data), asked))
				}
				if !slices.Equal(store.hints, wantHints) {
					t.Errorf("told %q, want %q", store.hints, wantHints)
				}
				checkFiles(t, dst, want)
			})
		}
	}
}
