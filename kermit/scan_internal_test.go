package kermit

import (
	"errors"
	"io"
	"slices"
	"testing"

	"kerf/framing"
)

// wire encodes one packet with check chk.
func wire(t *testing.T, seq int, typ byte, data string, chk framing.CheckType) []byte {
	t.Helper()
	b, err := framing.Frame{Check: chk}.AppendPacket(nil, framing.Packet{Seq: seq, Type: typ, Data: []byte(data)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// scan's verdicts on what the reader may meet: its whole policy on
// block checks and parity, without a link.
func TestScan(t *testing.T) {
	sinit := "~! @-#Y1"  // a Send-Init's data
	sinit5 := "~! @-#Y5" // one asking for type 3 on every packet
	fresh := scanState{mark: framing.SOH, chk: 1, probe3: true}
	agreed3 := scanState{mark: framing.SOH, chk: 3} // type 3 agreed, no probing
	agreed2 := scanState{mark: framing.SOH, chk: 2}
	inDamage3 := scanState{mark: framing.SOH, chk: 3, inDamage: true}
	detect := scanState{mark: framing.SOH, chk: 1, probe3: true, detect: true}
	d := wire(t, 5, 'D', "hello", 3)
	damaged := append([]byte(nil), d...)
	damaged[6] ^= 0x01
	cut := d[:len(d)-3]
	long := wire(t, 6, 'D', "a data field of some sixty bytes, long enough to be cut ....", 3)
	ack := wire(t, 5, 'Y', "", 3)
	s1 := wire(t, 0, 'S', sinit, 1)
	s5 := wire(t, 0, 'S', sinit5, 3)
	for _, tc := range []struct {
		name   string
		st     scanState
		in     []byte
		v      scanVerdict
		n      int // bytes consumed (scanGood, scanBad)
		typ    byte
		chk3   bool
		weak   bool
		parity string
	}{
		{name: "good", st: agreed3, in: d, v: scanGood, n: len(d), typ: 'D'},
		{name: "trailing bytes stay", st: agreed3, in: append(append([]byte(nil), d...), 'x', 'y'), v: scanGood, n: len(d), typ: 'D'},
		{name: "damaged: skip one byte", st: agreed3, in: damaged, v: scanBad, n: 1},
		{name: "incomplete", st: agreed3, in: cut, v: scanMore},
		{name: "incomplete with a mark inside is damage", st: agreed3, in: append(append([]byte(nil), long[:10]...), ack...), v: scanBad, n: 1},
		{name: "parity packet cut by a mark is damage", st: detect, in: append(addParity(s1, "even")[:6], ack...), v: scanBad, n: 1},
		{name: "wrong check type, not an init packet", st: agreed3, in: wire(t, 5, 'D', "hello", 1), v: scanBad, n: 1},
		{name: "S uses check 1 after type 2 was agreed", st: agreed2, in: s1, v: scanGood, n: len(s1), typ: 'S'},
		{name: "G uses check 1 after type 3 was agreed", st: agreed3, in: wire(t, 0, 'G', "F", 1), v: scanGood, n: len(wire(t, 0, 'G', "F", 1)), typ: 'G'},
		{name: "a restarted peer's E (check 1, seq 0) after type 3 was agreed", st: agreed3, in: wire(t, 0, 'E', "restarted", 1), v: scanGood, n: len(wire(t, 0, 'E', "restarted", 1)), typ: 'E'},
		// A D whose type a bit error made E passes check 1 one time in 64.
		{name: "a check-1 E numbered as a data packet is damage", st: agreed3, in: wire(t, 12, 'E', "all been sound long", 1), v: scanBad, n: 1},
		// A D into which a slipping line put a C or an R where its type
		// was: the same, for every type that starts a transaction.
		{name: "a check-1 C numbered as a data packet is damage", st: agreed3, in: wire(t, 2, 'C', "\xfb}\xc3#\xc1", 1), v: scanBad, n: 1},
		{name: "a check-1 R numbered as a data packet is damage", st: agreed3, in: wire(t, 41, 'R', "all256.bin", 1), v: scanBad, n: 1},
		{name: "a check-1 S numbered as a data packet is damage", st: agreed3, in: wire(t, 7, 'S', sinit, 1), v: scanBad, n: 1},
		// A mark a line error made inside a damaged packet's data: what
		// follows it is taken with the agreed check only.
		{name: "inside damage: a check-1 E numbered 0 is damage", st: inDamage3, in: wire(t, 0, 'E', "M\xb2\xf4\xec#Q", 1), v: scanBad, n: 1},
		{name: "inside damage: a check-1 S numbered 0 is damage", st: inDamage3, in: s1, v: scanBad, n: 1},
		{name: "inside damage: a packet with the agreed check is taken", st: inDamage3, in: d, v: scanGood, n: len(d), typ: 'D'},
		{name: "FORCE-3 Send-Init while probing", st: fresh, in: s5, v: scanGood, n: len(s5), typ: 'S', chk3: true},
		{name: "type-3 Send-Init not probing", st: agreed2, in: wire(t, 0, 'S', sinit5, 3), v: scanBad, n: 1},
		{name: "type-3 D while probing is damage", st: fresh, in: wire(t, 1, 'D', "x", 3), v: scanBad, n: 1},
		{name: "forced: everything type 3", st: scanState{mark: framing.SOH, chk: 3, force3: true}, in: s5, v: scanGood, n: len(s5), typ: 'S'},
		// Handed on weak: the engine takes a second for a peer that
		// does not force type 3 (Session.got), the first for damage.
		{name: "forced: a type-1 S is handed on weak", st: scanState{mark: framing.SOH, chk: 3, force3: true}, in: wire(t, 0, 'S', sinit, 1), v: scanGood, n: len(s1), typ: 'S', weak: true},
		{name: "forced: a type-1 D is damage", st: scanState{mark: framing.SOH, chk: 3, force3: true}, in: wire(t, 1, 'D', "x", 1), v: scanBad, n: 1},
		{name: "even parity unread without detection", st: fresh, in: addParity(wire(t, 0, 'S', sinit, 1), "even"), v: scanBad, n: 1},
		{name: "even parity detected", st: detect, in: addParity(wire(t, 0, 'S', sinit, 1), "even"), v: scanGood, n: len(s1), typ: 'S', parity: "even"},
		{name: "odd parity detected", st: detect, in: addParity(wire(t, 0, 'S', sinit, 1), "odd"), v: scanGood, n: len(s1), typ: 'S', parity: "odd"},
		{name: "mark parity detected", st: detect, in: addParity(wire(t, 0, 'S', sinit, 1), "mark"), v: scanGood, n: len(s1), typ: 'S', parity: "mark"},
		{name: "parity and FORCE-3", st: detect, in: addParity(s5, "even"), v: scanGood, n: len(s5), typ: 'S', chk3: true, parity: "even"},
		{name: "parity packet not all here", st: detect, in: addParity(wire(t, 0, 'S', sinit, 1), "even")[:6], v: scanMore},
		{name: "mixed 8th bits are damage", st: detect, in: func() []byte { b := addParity(wire(t, 0, 'S', sinit, 1), "even"); b[3] ^= 0x80; return b }(), v: scanBad, n: 1},
		{name: "no 8th bits: plain packet, no parity", st: detect, in: wire(t, 0, 'S', sinit, 1), v: scanGood, n: len(s1), typ: 'S'},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw []byte
			in := append([]byte(nil), tc.in...)
			ip, n, v := scan(in, tc.st, &raw)
			if v != tc.v {
				t.Fatalf("verdict %d, want %d (packet %+v)", v, tc.v, ip)
			}
			if v == scanMore {
				return
			}
			if n != tc.n {
				t.Errorf("consumed %d bytes, want %d", n, tc.n)
			}
			if v == scanBad {
				if !ip.bad {
					t.Error("damage not marked bad")
				}
				return
			}
			if ip.bad || ip.Type != tc.typ || ip.chk3 != tc.chk3 || ip.parity != tc.parity || ip.wireN != n || tc.weak && !ip.weak {
				t.Errorf("got type %q bad %v chk3 %v weak %v parity %q wireN %d; want %q false %v %v %q %d",
					ip.Type, ip.bad, ip.chk3, ip.weak, ip.parity, ip.wireN, tc.typ, tc.chk3, tc.weak, tc.parity, n)
			}
		})
	}
}

// The reader on a stream where a line error made a mark inside a data
// packet, and the bytes after it read as a check-1 E numbered 0 (what a
// restarted peer sends): that is damage, not the peer's word, while the
// same E right after an end of line is taken, damage before it or not.
func TestReaderMarkInsideDamage(t *testing.T) {
	fake := wire(t, 0, 'E', "M\xb2\xf4\xec#Q\xf2\xe2L", 1) // no end of line: inside data
	hit := wire(t, 6, 'D', "a data field of some sixty bytes, long enough to hold a packet", 3)
	copy(hit[12:], fake)
	var stream []byte
	for _, b := range [][]byte{
		wire(t, 5, 'D', "hello", 3), []byte("\r"),
		hit, []byte("\r"),
		wire(t, 0, 'E', "restarted", 1), []byte("\r"),
		wire(t, 6, 'D', "more", 3), []byte("\r"),
		wire(t, 0, 'E', "again", 1), []byte("\r"),
	} {
		stream = append(stream, b...)
	}
	pr, pw := io.Pipe()
	c := newPktConn(struct {
		io.Reader
		io.Writer
	}{pr, io.Discard}, false, framing.SOH, false)
	defer c.stop()
	c.rchk.Store(3) // type 3 agreed
	c.probe3.Store(false)
	go func() {
		pw.Write(stream)
		pw.Close()
	}()
	var got []string
	for ip := range c.in {
		switch {
		case ip.err != nil:
			want := []string{"D hello", "bad", "E restarted", "D more", "E again"}
			// Damage may be reported more than once (a byte skipped at a
			// time); its reports are folded into one.
			var folded []string
			for _, g := range got {
				if g == "bad" && len(folded) > 0 && folded[len(folded)-1] == "bad" {
					continue
				}
				folded = append(folded, g)
			}
			if len(folded) != len(want) {
				t.Fatalf("read %q; want %q", folded, want)
			}
			for i := range want {
				if folded[i] != want[i] {
					t.Fatalf("read %q; want %q", folded, want)
				}
			}
			return
		case ip.bad:
			got = append(got, "bad")
		default:
			got = append(got, string(ip.Type)+" "+string(ip.Data))
		}
	}
}

// With CtrlCQuits, three Ctrl-C in a row between packets end the reader
// with ErrCtrlC; Ctrl-C inside packets (unprefixed data), two, or three
// broken by a packet do not.
func TestReaderCtrlCQuits(t *testing.T) {
	var stream []byte
	for _, b := range [][]byte{
		wire(t, 1, 'D', "\x03\x03\x03 in the data", 1), []byte("\r\x03\x03"),
		wire(t, 2, 'D', "between", 1), []byte("\r\x03x\x03\x03"),
		wire(t, 3, 'D', "last", 1), []byte("\r\x03\x03\x03"),
		wire(t, 4, 'D', "never read", 1), []byte("\r"),
	} {
		stream = append(stream, b...)
	}
	for _, quits := range []bool{true, false} {
		pr, pw := io.Pipe()
		c := newPktConn(struct {
			io.Reader
			io.Writer
		}{pr, io.Discard}, false, framing.SOH, quits)
		go func() {
			pw.Write(stream)
			pw.Close()
		}()
		var got []string
		var end error
		for ip := range c.in {
			if ip.err != nil {
				end = ip.err
				break
			}
			got = append(got, string(ip.Data))
		}
		c.stop()
		want := []string{"\x03\x03\x03 in the data", "between", "last"}
		if !quits {
			want = append(want, "never read")
		}
		if !slices.Equal(got, want) || errors.Is(end, ErrCtrlC) != quits {
			t.Errorf("CtrlCQuits %v: read %q, ended %v; want %q", quits, got, end, want)
		}
	}
}
