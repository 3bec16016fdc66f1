package kermit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"syscall"
	"testing"
	"time"

	"kerf/framing"
)

// keptFile is an Incoming whose cuts fail (a file system over quota that
// refuses even a truncate: QA aj F1).
type keptFile struct {
	roomFile
	keptWith *bool // Abort's keep
	cuts     []string
}

func (f *keptFile) Truncate(int64) error {
	f.cuts = append(f.cuts, "Truncate")
	return syscall.EDQUOT
}
func (f *keptFile) Abort(keep bool) error {
	f.keptWith = &keep
	return nil
}
func (f *keptFile) PartialKept(int) (int64, uint32, []framing.KeptRange, error) {
	return 0, 0, nil, nil
}
func (f *keptFile) KeepRanges(prefix int64, _ [][2]int64) (int64, error) {
	f.cuts = append(f.cuts, "KeepRanges")
	return 0, syscall.EDQUOT
}

// cutData is a data path that received prefix bytes of a file without a
// gap, and kept ranges past it.
type cutData struct {
	DataPath
	prefix int64
}

func (d cutData) Abandon(uint32) int64 { return d.prefix }
func (d cutData) AbandonKept(uint32) (int64, [][2]int64) {
	return d.prefix, [][2]int64{{d.prefix + 100, d.prefix + 200}}
}
func (d cutData) ExpectKept(uint32, io.WriterAt, int64, int64, []framing.KeptRange) error {
	return errors.New("not used")
}

// A partial whose cut fails is kept as it is (its data whole up to the
// prefix the data path received), not removed: a resume finds its
// prefix again (review 55: the kermit side of QA aj F1), whether the
// store keeps ranges or only truncates.
func TestUncutPartialKeptByTheEngine(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := NewSession(a, DefaultConfig())
	defer s.Close()
	s.neg.dual = true
	for _, ranges := range []bool{true, false} {
		var inc Incoming = &keptFile{}
		if !ranges {
			inc = &truncOnly{&keptFile{}}
		}
		s.data = cutData{prefix: 4096}
		cur := &recvFile{name: "f", inc: inc, attrs: framing.NewAttributes(), expected: true, off: 8192}
		kept := s.keepPartial(cur, inc)
		f := inc.(interface{ file() *keptFile }).file()
		want := "Truncate"
		if ranges {
			want = "KeepRanges"
		}
		if len(f.cuts) != 1 || f.cuts[0] != want {
			t.Errorf("ranges %v: cut by %v, want %s", ranges, f.cuts, want)
		}
		if !kept || f.keptWith == nil || !*f.keptWith {
			abort := "not called"
			if f.keptWith != nil {
				abort = fmt.Sprintf("Abort(%v)", *f.keptWith)
			}
			t.Errorf("ranges %v: kept %v, %s; want the uncut partial kept", ranges, kept, abort)
		}
	}
}

func (f *keptFile) file() *keptFile { return f }

// truncOnly is a keptFile without KeptPartial: the engine cuts it by
// Truncate alone.
type truncOnly struct{ f *keptFile }

func (t *truncOnly) WriteAt(b []byte, o int64) (int, error)  { return t.f.WriteAt(b, o) }
func (t *truncOnly) Name() string                            { return t.f.Name() }
func (t *truncOnly) Partial() (int64, uint32, error)         { return t.f.Partial() }
func (t *truncOnly) Truncate(n int64) error                  { return t.f.Truncate(n) }
func (t *truncOnly) Commit(m time.Time, p fs.FileMode) error { return t.f.Commit(m, p) }
func (t *truncOnly) Abort(keep bool) error                   { return t.f.Abort(keep) }
func (t *truncOnly) file() *keptFile                         { return t.f }
