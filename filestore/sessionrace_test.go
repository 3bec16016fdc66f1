package filestore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// Sessions receiving one name at once: the final name only ever holds a
// whole file of one of them, and no commit fails. (Regression: a session
// that opened the temporary name just before its holder renamed it, and
// locked it just after, wrote into the committed file in place, then
// failed to commit it or renamed a third session's partial over it.)
// The same with small files received unnamed (unnamed.go), whose
// commits meet each other's files at the final name.
func TestConcurrentReceiversOfOneName(t *testing.T) {
	t.Run("temporary name", func(t *testing.T) { concurrentReceivers(t, 0) })
	t.Run("unnamed", func(t *testing.T) { concurrentReceivers(t, filestore.NetUnnamedMax) })
}

func concurrentReceivers(t *testing.T, unnamedMax int64) {
	dir := t.TempDir()
	const size = 64 << 10
	var stop atomic.Bool
	var commits, commitErrs atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			data := bytes.Repeat([]byte{byte('A' + w)}, size)
			for !stop.Load() {
				d, err := filestore.Open(dir)
				if err != nil {
					t.Error(err)
					return
				}
				d.UnnamedMax = unnamedMax
				if unnamedMax > 0 {
					// Gone from the listing, so that the file is
					// unnamed, and its commit most often finds the
					// others' x there again.
					os.Remove(filepath.Join(dir, "x"))
				}
				in, err := d.Create("x")
				if err != nil {
					d.Close() // busy: another holds it
					continue
				}
				in.(kermit.SizeHinted).WillHold(size, false)
				in.Truncate(0)
				in.WriteAt(data, 0)
				if err := in.Commit(time.Time{}, 0o644); err != nil {
					commitErrs.Add(1)
					t.Logf("commit: %v", err)
					in.Abort(false)
				} else {
					commits.Add(1)
				}
				d.Close()
			}
		})
	}
	bad := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		b, err := os.ReadFile(filepath.Join(dir, "x"))
		if err != nil {
			continue // not there yet
		}
		if len(b) != size || !bytes.Equal(b, bytes.Repeat(b[:1], size)) {
			if bad++; bad <= 3 {
				t.Errorf("the final name holds %d bytes, not one session's whole file", len(b))
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if commits.Load() == 0 || commitErrs.Load() > 0 {
		t.Errorf("%d commits, %d failed (want none failed)", commits.Load(), commitErrs.Load())
	}
	if bad > 0 {
		t.Errorf("%d bad reads of the final name", bad)
	}
}
