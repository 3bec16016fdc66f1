package kermit

import "testing"

// skipAll takes every block of zeros as a hole, or none.
type skipAll struct {
	take    bool
	written int64
}

func (s *skipAll) WriteAt(b []byte, _ int64) (int, error) {
	s.written += int64(len(b))
	return len(b), nil
}

func (s *skipAll) SkipZerosAt(_, n int64) (bool, error) { return s.take, nil }

// A block of zeros the store takes as a hole counts as received in the
// progress; one it does not take is left to be written (and counted
// then), not counted twice.
func TestProgressCountsSkippedZeros(t *testing.T) {
	for _, take := range []bool{true, false} {
		var got int64
		dst := &skipAll{take: take}
		p := &progressWriterAt{w: dst, report: func(n int64) { got += n }}
		done, err := p.SkipZerosAt(0, 1<<20)
		if err != nil || done != take {
			t.Fatalf("take=%v: SkipZerosAt = %v, %v", take, done, err)
		}
		want := int64(0)
		if take {
			want = 1 << 20
		}
		if got != want {
			t.Errorf("take=%v: progress %d, want %d", take, got, want)
		}
	}
	if done, _ := (&progressWriterAt{w: discardAt{}, report: func(int64) {}}).SkipZerosAt(0, 5); !done {
		t.Error("a discarded file's zeros are to be written")
	}
}
