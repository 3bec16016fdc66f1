package kermit

import (
	"fmt"
	"io/fs"
	"net"
	"testing"
	"time"

	"kerf/framing"
)

// roomFile is an Incoming with limit bytes of room.
type roomFile struct {
	limit   int64
	aborted bool
}

func (f *roomFile) WriteAt(b []byte, _ int64) (int, error) { return len(b), nil }
func (f *roomFile) Name() string                           { return "f" }
func (f *roomFile) Partial() (int64, uint32, error)        { return 0, 0, nil }
func (f *roomFile) Truncate(int64) error                   { return nil }
func (f *roomFile) Commit(time.Time, fs.FileMode) error    { return nil }
func (f *roomFile) Abort(bool) error                       { f.aborted = true; return nil }
func (f *roomFile) Room(n int64) error {
	if n > f.limit {
		return fmt.Errorf("needs %d bytes, %d free", n, f.limit)
	}
	return nil
}

// A file announced by its size in K alone (tag !) is checked against
// the room as one announced exactly is, and refused with the tag it
// came with (QA r: a terabyte so announced was taken).
func TestRoomCheckedForSizeInK(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := NewSession(a, DefaultConfig())
	defer s.Close()
	for _, tc := range []struct {
		attrs   framing.Attributes
		refused string // the reason tag, "" accepted
	}{
		{framing.Attributes{Length: -1, LengthK: 1 << 30, Perm: -1}, "!"},
		{framing.Attributes{Length: 5 << 30, LengthK: -1, Perm: -1}, "1"},
		{framing.Attributes{Length: -1, LengthK: 1024, Perm: -1}, ""}, // 1 MiB: fits
		{framing.Attributes{Length: -1, LengthK: -1, Perm: -1}, ""},
	} {
		f := &roomFile{limit: 1 << 30}
		cur := &recvFile{name: "f", inc: f, attrs: framing.NewAttributes()}
		reply, err := s.handleAttrs(cur, tc.attrs.Marshal(90)[0])
		if err != nil {
			t.Fatalf("%+v: %v", tc.attrs, err)
		}
		r, _ := framing.ParseAttrReply(reply)
		switch {
		case tc.refused == "" && !r.Accept:
			t.Errorf("%+v refused (%q)", tc.attrs, reply)
		case tc.refused != "" && (r.Accept || r.Reasons != tc.refused || !f.aborted):
			t.Errorf("%+v: reply %q, want refused for %q", tc.attrs, reply, tc.refused)
		}
	}
}
