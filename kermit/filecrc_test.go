package kermit_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// rewritingConn is a line that damages packets so that their block
// check still passes (what a check lets through now and then): each
// packet written goes through rewrite, which may return another packet
// and the check to frame it with (a check made again for damage made).
// If twice is set, a packet it says so of is written twice (a resend).
type rewritingConn struct {
	net.Conn
	rewrite func(p framing.Packet, chk framing.CheckType) (framing.Packet, framing.CheckType, bool)
	twice   func(p framing.Packet) bool

	mu   sync.Mutex
	pend []byte
}

func (c *rewritingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.pend = append(c.pend, b...)
	var out []byte
	for {
		i := bytes.IndexByte(c.pend, framing.SOH)
		if i < 0 {
			out = append(out, c.pend...)
			c.pend = c.pend[:0]
			break
		}
		out = append(out, c.pend[:i]...)
		c.pend = c.pend[i:]
		p, n, chk, ok := parseAny(c.pend)
		if !ok {
			if bytes.IndexByte(c.pend[1:], framing.SOH) >= 0 || len(c.pend) > 2*framing.MaxLongLen {
				out = append(out, c.pend[0]) // not a packet: pass it on
				c.pend = c.pend[1:]
				continue
			}
			break // the rest of it comes with the next write
		}
		pkt := c.pend[:n]
		if c.rewrite != nil {
			if q, qchk, yes := c.rewrite(p, chk); yes {
				if forged, err := (framing.Frame{Check: qchk}).AppendPacket(nil, q); err == nil {
					pkt = forged
				}
			}
		}
		out = append(out, pkt...)
		if c.twice != nil && c.twice(p) {
			out = append(out, pkt...)
		}
		c.pend = c.pend[n:]
	}
	c.mu.Unlock()
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// forgingConn is a rewritingConn whose rewrite changes one data
// character of the first D after each of the first times F packets
// naming name.
type forgingConn struct {
	*rewritingConn
	forged int
}

func newForgingConn(conn net.Conn, name string, times int) *forgingConn {
	f := &forgingConn{}
	seen, armed := 0, false
	f.rewritingConn = &rewritingConn{Conn: conn, rewrite: func(p framing.Packet, chk framing.CheckType) (framing.Packet, framing.CheckType, bool) {
		switch {
		case p.Type == 'F' && strings.Contains(string(p.Data), name):
			seen++
			armed = seen <= times
		case p.Type == 'D' && armed:
			armed = false
			if j := bytes.IndexFunc(p.Data, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' }); j >= 0 {
				p.Data = append([]byte(nil), p.Data...)
				p.Data[j] ^= 0x01 // another letter: no prefix made or lost
				f.forged++
				return p, chk, true
			}
		}
		return p, chk, false
	}}
	return f
}

// parseAny parses the packet at the front of b with whichever block
// check it passes.
func parseAny(b []byte) (framing.Packet, int, framing.CheckType, bool) {
	for _, chk := range []framing.CheckType{3, 2, 1} {
		if p, n, err := (framing.Frame{Check: chk}).ParsePacket(b); err == nil {
			return p, n, chk, true
		}
	}
	return framing.Packet{}, 0, 0, false
}

// Data that passes every packet's block check and not the whole file's
// CRC-32C (capas3FileCRC) is not stored: the receiver throws the file
// away and says so in the Z's ACK, and the sender sends it again, whole.
// The receiver's failure is withdrawn when the file then comes whole
// (Event.Again); the sender reports the file once, done. In text mode
// too, whose check is of the canonical form on the wire.
func TestFileCRCCatchesWhatPacketChecksMiss(t *testing.T) {
	for _, text := range []bool{false, true} {
		t.Run(map[bool]string{false: "binary", true: "text"}[text], func(t *testing.T) {
			files := []testFile{{"first.txt", []byte("before\n")}, {"x.txt", bytes.Repeat([]byte("Kermit lines of letters\n"), 400)}, {"after.txt", []byte("after\n")}}
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, files)
			cfg := kermit.DefaultConfig()
			cfg.Window, cfg.Text = 4, text
			a, b := link(t, 0, 1)
			fa := newForgingConn(a, "x.txt", 1)
			scfg, rcfg := cfg, cfg
			var sent, got endings
			scfg.Events, rcfg.Events = sent.of("x.txt"), got.of("x.txt")
			serr, rerr, _ := transfer(t, fa, b, scfg, rcfg, out, dst)
			if serr != nil || rerr != nil {
				t.Fatalf("send: %v, receive: %v", serr, rerr)
			}
			if fa.forged != 1 {
				t.Fatalf("forged %d packets, want 1", fa.forged)
			}
			checkFiles(t, dst, files)
			if e := sent.String(); e != "done" {
				t.Errorf("sender's events for x.txt: %q; want one done", e)
			}
			if e := got.String(); e != "failed,done again" {
				t.Errorf("receiver's events for x.txt: %q; want failed, then done again", e)
			}
		})
	}
}

// A file damaged that way every time it goes is sent maxCRCResends
// times more and then reported failed by both sides, and nothing of it
// is stored; the group goes on.
func TestFileCRCGivesUp(t *testing.T) {
	files := []testFile{{"x.bin", bytes.Repeat([]byte("abcdefgh"), 3000)}, {"after.bin", []byte("after")}}
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	cfg := kermit.DefaultConfig()
	a, b := link(t, 0, 1)
	fa := newForgingConn(a, "x.bin", 100)
	rcfg := cfg
	var got endings
	rcfg.Events = got.of("x.bin")
	serr, rerr, _ := transfer(t, fa, b, cfg, rcfg, out, dst)
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "x.bin" {
		t.Fatalf("send: %v; want x.bin failed", serr)
	}
	if rerr != nil {
		t.Fatalf("receive: %v", rerr)
	}
	if e := got.String(); e != "failed,failed,failed" {
		t.Errorf("receiver's events for x.bin: %q; want failed three times, never done", e)
	}
	if fa.forged != 3 {
		t.Errorf("x.bin went %d times; want 3 (once, and twice again)", fa.forged)
	}
	if _, err := os.Stat(filepath.Join(dst, "x.bin")); err == nil {
		t.Error("x.bin stored")
	}
	checkFiles(t, dst, files[1:])
}

// endings records how one file ended, each time it did: done, done
// again (a failure withdrawn) or failed.
type endings struct {
	mu   sync.Mutex
	seen []string
}

func (r *endings) of(name string) func(kermit.Event) {
	return func(e kermit.Event) {
		if e.Name != name || e.Kind != kermit.FileDone && e.Kind != kermit.FileFailed {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case e.Kind == kermit.FileDone && e.Again:
			r.seen = append(r.seen, "done again")
		case e.Kind == kermit.FileDone:
			r.seen = append(r.seen, "done")
		default:
			r.seen = append(r.seen, "failed")
		}
	}
}

func (r *endings) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.seen, ",")
}

// An ACK of the S that a line damaged and whose 6-bit check still passed
// (a byte added before its fields: every field shifted, the check type
// read as 'Y', so type 1 and a pad) is taken as damaged, and the S sent
// again, rather than agreed to: agreed, the sender went on with check 1
// while the receiver used 3, and gave up after 21 NAKs.
func TestShiftedInitAckIsDamage(t *testing.T) {
	files := []testFile{{"x.bin", randomBytes(5000, 3)}}
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	cfg := kermit.DefaultConfig()
	a, b := link(t, 0, 1)
	done := false
	rb := &rewritingConn{Conn: b, rewrite: func(p framing.Packet, chk framing.CheckType) (framing.Packet, framing.CheckType, bool) {
		if done || p.Type != 'Y' || p.Seq != 0 {
			return p, chk, false
		}
		done = true
		p.Data = append([]byte{0x83}, p.Data...)
		return p, chk, true
	}}
	serr, rerr, st := transfer(t, a, rb, cfg, cfg, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send: %v, receive: %v", serr, rerr)
	}
	if !done {
		t.Fatal("no ACK of the S rewritten")
	}
	if st.BadPackets < 1 || st.Retransmissions < 1 {
		t.Errorf("stats %+v: want the rewritten ACK counted damaged and the S sent again", st)
	}
	checkFiles(t, dst, files)
}

// A data packet numbered 0 whose type a bit error made E, passing the
// 6-bit check by chance while type 3 is agreed, looks like a restarted
// peer's E: it is damage, and the transfer goes on, unless a second
// comes with no good packet between (TestWeakEBelievedWhenRepeated).
func TestDataMadeWeakEGoesOn(t *testing.T) {
	files := []testFile{{"x.bin", randomBytes(30_000, 5)}}
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	cfg := kermit.DefaultConfig()
	cfg.MaxPacket = 94 // seq 0 comes round in 30 KB
	a, b := link(t, 0, 1)
	made := 0
	fa := &rewritingConn{Conn: a, rewrite: func(p framing.Packet, chk framing.CheckType) (framing.Packet, framing.CheckType, bool) {
		if made > 0 || p.Type != 'D' || p.Seq != 0 {
			return p, chk, false
		}
		made++
		p.Type = 'E'
		return p, 1, true
	}}
	serr, rerr, st := transfer(t, fa, b, cfg, cfg, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send: %v, receive: %v", serr, rerr)
	}
	if made != 1 || st.Retransmissions < 1 {
		t.Errorf("%d packets made E, %d sent again; want 1 and at least 1", made, st.Retransmissions)
	}
	checkFiles(t, dst, files)
}

// streamReader is a source read once, as standard input is: no Seek.
type streamReader struct{ r *bytes.Reader }

func (s streamReader) Read(b []byte) (int, error)            { return s.r.Read(b) }
func (s streamReader) ReadAt(b []byte, o int64) (int, error) { return s.r.ReadAt(b, o) }
func (streamReader) Close() error                            { return nil }

// A stream that failed its whole-file CRC is not sent again (a second
// open would read nothing, and an empty copy would pass): reported
// failed at once.
func TestFileCRCStreamNotSentAgain(t *testing.T) {
	data := bytes.Repeat([]byte("stream of letters "), 500)
	opens := 0
	out := []kermit.OutgoingFile{{Name: "s.txt", Size: -1, Open: func() (kermit.FileReader, error) {
		opens++
		if opens > 1 {
			return streamReader{bytes.NewReader(nil)}, nil // used up
		}
		return streamReader{bytes.NewReader(data)}, nil
	}}}
	dst := t.TempDir()
	cfg := kermit.DefaultConfig()
	a, b := link(t, 0, 1)
	fa := newForgingConn(a, "s.txt", 100)
	serr, _, _ := transfer(t, fa, b, cfg, cfg, out, dst)
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 1 {
		t.Fatalf("send: %v; want s.txt failed", serr)
	}
	if opens != 1 || fa.forged != 1 {
		t.Errorf("opened %d times, forged %d; want 1 and 1", opens, fa.forged)
	}
	if _, err := os.Stat(filepath.Join(dst, "s.txt")); err == nil {
		t.Error("s.txt stored")
	}
}

// resumedBigTxt is a 200,000-byte big.txt to send, a partial of its
// first 120,000 bytes at the receiver, and configurations of a sender
// that resumes and of its receiver.
func resumedBigTxt(t *testing.T) (data []byte, out []kermit.OutgoingFile, dst string, scfg, rcfg kermit.Config) {
	t.Helper()
	data = bytes.Repeat([]byte("resumed letters "), 12_500)
	src := t.TempDir()
	dst = t.TempDir()
	out = writeFiles(t, src, []testFile{{"big.txt", data}})
	if err := os.WriteFile(filepath.Join(dst, ".big.txt"+filestore.PartSuffix), data[:120_000], 0o600); err != nil {
		t.Fatal(err)
	}
	scfg, rcfg = kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Resume = true
	return data, out, dst, scfg, rcfg
}

// A resumed file's check covers the kept partial too (its CRC combined
// with the rest's): damage in the part sent is caught, the partial is
// thrown away with it, and the file comes again whole.
func TestFileCRCResumed(t *testing.T) {
	data, out, dst, scfg, rcfg := resumedBigTxt(t)
	var got endings
	rcfg.Events = got.of("big.txt")
	a, b := link(t, 0, 1)
	fa := newForgingConn(a, "big.txt", 1)
	serr, rerr, st := transfer(t, fa, b, scfg, rcfg, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send: %v, receive: %v", serr, rerr)
	}
	checkFiles(t, dst, []testFile{{"big.txt", data}})
	if fa.forged != 1 || st.FileBytes != 200_000 {
		t.Errorf("forged %d, moved %d bytes; want 1 and the whole 200000 the second time", fa.forged, st.FileBytes)
	}
	if e := got.String(); e != "failed,done again" {
		t.Errorf("receiver's events: %q; want failed, then done again", e)
	}
}

// A resumed file's progress in packets says where the attempt began, on
// both sides, as the data channel's does (review 50: offset 0, after a
// file_start with the offset).
func TestPacketProgressCarriesOffset(t *testing.T) {
	data, out, dst, scfg, rcfg := resumedBigTxt(t)
	var mu sync.Mutex
	offsets := map[string][]int64{}
	note := func(side string) func(kermit.Event) {
		return func(e kermit.Event) {
			if e.Kind == kermit.FileProgress {
				mu.Lock()
				offsets[side] = append(offsets[side], e.Offset)
				mu.Unlock()
			}
		}
	}
	scfg.Events, rcfg.Events = note("sender"), note("receiver")
	a, b := link(t, 0, 1)
	serr, rerr, _ := transfer(t, a, b, scfg, rcfg, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send: %v, receive: %v", serr, rerr)
	}
	checkFiles(t, dst, []testFile{{"big.txt", data}})
	for _, side := range []string{"sender", "receiver"} {
		offs := offsets[side]
		if len(offs) == 0 || slices.ContainsFunc(offs, func(o int64) bool { return o != 120_000 }) {
			t.Errorf("%s's progress offsets: %v; want each 120000", side, offs)
		}
	}
}

// A dual-channel Z whose CRC-32C is no hexadecimal number (a third
// party's "C0x..."), is a protocol error saying so, not a mismatch of a
// file that "changed while it was sent" (QA am F7).
func TestDualZWithBadCRCIsAProtocolError(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"z.bin", randomBytes(100_000, 7)}})
	a, b := link(t, 0, 1)
	a = &rewritingConn{Conn: a, rewrite: func(p framing.Packet, chk framing.CheckType) (framing.Packet, framing.CheckType, bool) {
		if p.Type == 'Z' && len(p.Data) > 1 && p.Data[0] == 'C' {
			p.Data = append([]byte("C0x"), p.Data[1:]...)
			return p, chk, true
		}
		return p, chk, false
	}}
	da, db := dualPair(t)
	err := receiveWhileSent(t, a, b, da, db, kermit.DefaultConfig(), out, dst)
	if !errors.Is(err, kermit.ErrProtocol) || !strings.Contains(err.Error(), "bad CRC-32C") || strings.Contains(err.Error(), "changed") {
		t.Errorf("receiver: %v; want a protocol error saying the CRC is bad", err)
	}
}
