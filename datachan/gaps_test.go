package datachan

import (
	"io"
	"net"
	"strings"
	"testing"

	"kerf/framing"
)

// A peer that sends every other byte of a file, last first, opens a new
// range with each block; past maxGaps the path fails (review: each such
// block was an insert into an ever longer list under the Path's lock,
// 60,000 of them holding it 3 s). Blocks that fill gaps between the
// ranges recorded are still taken.
func TestTooManyGapsFailThePath(t *testing.T) {
	cli, srv := net.Pipe()
	r := NewPath([]net.Conn{srv})
	defer r.Close()
	n := maxGaps + 100
	dst := newMemFile(2 * n)
	if err := r.Expect(1, dst, 0, int64(2*n)); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, cli)
	var buf []byte
	for i := n - 1; i >= 0; i-- {
		var fr [framing.BlockHeaderLen + 1]byte
		fr[framing.BlockHeaderLen] = 'x'
		framing.BlockHeader{FileID: 1, Offset: uint64(2 * i), Length: 1, PayloadCRC: framing.CRC32C(fr[framing.BlockHeaderLen:])}.Put(fr[:])
		buf = append(buf, fr[:]...)
	}
	cli.Write(buf) // fails once the path closes its end
	<-r.Failed()
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "separate ranges") {
		t.Errorf("path error %v; want one about too many ranges", err)
	}
	if got := r.Stats().BlocksReceived; got > int64(maxGaps) {
		t.Errorf("%d blocks taken, want at most %d", got, maxGaps)
	}
	cli.Close()
}

// joins tells a block that adds no range of its own.
func TestSpansJoins(t *testing.T) {
	ss := spans{{10, 20, 0}, {30, 40, 0}}
	for _, tc := range []struct {
		start, end uint64
		want       bool
	}{
		{20, 25, true},  // extends the first
		{25, 30, true},  // just before the second
		{20, 30, true},  // closes the gap
		{12, 18, true},  // within
		{22, 28, false}, // a range of its own
		{0, 5, false},
		{45, 50, false},
		{40, 45, true},
	} {
		if got := ss.joins(tc.start, tc.end); got != tc.want {
			t.Errorf("joins(%d, %d) = %v, want %v", tc.start, tc.end, got, tc.want)
		}
	}
}
