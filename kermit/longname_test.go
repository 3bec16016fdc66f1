package kermit_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"kerf/kermit"
)

// A file whose name does not fit one packet (a path of a served tree
// deeper than about 9,000 bytes) cannot be sent; the files after it
// still go, and a kerf receiver hears of it in the group's B and reports
// it failed, shortened. (QA: the file id it took put the data of every
// later file out of step, so a GET stalled, or with several sessions
// ended with exit 0 and the file silently missing.)
func TestNameLongerThanAPacket(t *testing.T) {
	for _, dual := range []bool{false, true} {
		t.Run(fmt.Sprintf("dual=%v", dual), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			want := []testFile{{"a.bin", randomBytes(5000, 1)}, {"b.bin", randomBytes(700_000, 2)}, {"c.bin", randomBytes(3000, 3)}}
			files := writeFiles(t, src, want)
			long := files[1]
			long.Name = strings.Repeat("dir/", 2500) + "deep.bin"
			files = []kermit.OutgoingFile{files[0], long, files[1], files[2]}
			var mu sync.Mutex
			var failed []kermit.Event
			rcfg := kermit.DefaultConfig()
			rcfg.Events = func(e kermit.Event) {
				if e.Kind == kermit.FileFailed {
					mu.Lock()
					failed = append(failed, e)
					mu.Unlock()
				}
			}
			serr, rerr := transferEitherInto(t, dual, kermit.DefaultConfig(), rcfg, files, dst)
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != long.Name || rerr != nil {
				t.Fatalf("send %v (want the long name failed), receive %v", serr, rerr)
			}
			checkFiles(t, dst, want)
			mu.Lock()
			defer mu.Unlock()
			if len(failed) != 1 || !errors.Is(failed[0].Err, kermit.ErrNameTooLong) {
				t.Fatalf("receiver reported %+v, want the long name failed (ErrNameTooLong)", failed)
			}
			if n := failed[0].Name; len(n) > 300 || !strings.HasPrefix(n, "dir/dir/") || !strings.HasSuffix(n, "/deep.bin") || !strings.Contains(n, "…") {
				t.Errorf("reported as %q: want it shortened in its middle", n)
			}
		})
	}
}
