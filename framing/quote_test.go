package framing

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func allBare() [256]bool {
	var b [256]bool
	for c := range 256 {
		b[c] = isControl(byte(c))
	}
	return b
}

var (
	qPlain   = Quoting{QCTL: '#'}
	qRept    = Quoting{QCTL: '#', REPT: '~'}
	qBin     = Quoting{QCTL: '#', QBIN: '&'}
	qBinRept = Quoting{QCTL: '#', QBIN: '&', REPT: '~'}
	qCaut    = Quoting{QCTL: '#', REPT: '~', Bare: CautiousBare()}
	qAll     = Quoting{QCTL: '#', REPT: '~', Bare: allBare()}
	qZero    = Quoting{} // QCTL 0 means '#'
)

func TestEncodeVectors(t *testing.T) {
	tests := []struct {
		name string
		q    Quoting
		in   string
		want string
	}{
		{"empty", qPlain, "", ""},
		{"printable", qPlain, "Hello, world", "Hello, world"},
		{"NUL", qPlain, "\x00", "#@"},
		{"SOH CR LF", qPlain, "\x01\r\n", "#A#M#J"},
		{"DEL", qPlain, "\x7f", "#?"},
		{"QCTL", qPlain, "#", "##"},
		{"QCTL 8-bit", qPlain, "\xa3", "#\xa3"},
		{"C1 kept 8-bit", qPlain, "\x8d", "#\xcd"},
		{"255", qPlain, "\xff", "#\xbf"},
		{"high printable", qPlain, "\xe9", "\xe9"},
		{"& and ~ not special", qPlain, "&~", "&~"},
		{"zero QCTL is #", qZero, "#\x00", "###@"},
		{"QBIN", qBin, "\xe9", "&i"},
		{"QBIN + control", qBin, "\x8d", "&#M"},
		{"QBIN escaped", qBin, "&", "#&"},
		{"QBIN 8-bit escaped", qBin, "\xa6", "&#&"},
		{"QBIN 8-bit QCTL", qBin, "\xa3", "&##"},
		{"QBIN 255", qBin, "\xff", "&#?"},
		{"REPT escaped", qRept, "~", "#~"},
		{"REPT 8-bit escaped", qRept, "\xfe", "#\xfe"},
		{"run of 2 plain", qRept, "aa", "aa"},
		{"run of 3", qRept, "aaa", "~#a"},
		{"run of 2 prefixed", qRept, "\x00\x00", "#@#@"},
		{"run of 2 three-char units", qBinRept, "\x80\x80", "~\"&#@"},
		{"run of 2 then other", qBinRept, "\x80\x80x", "~\"&#@x"},
		{"run of REPT", qRept, "~~~~", "~$#~"},
		{"run of QCTL", qRept, "###", "~###"},
		{"run of 94", qRept, string(bytes.Repeat([]byte("z"), 94)), "~~z"},
		{"run of 95", qRept, string(bytes.Repeat([]byte("z"), 95)), "~~zz"},
		{"run of 100", qRept, string(bytes.Repeat([]byte("z"), 100)), "~~z~&z"},
		{"run of 97", qRept, string(bytes.Repeat([]byte("z"), 97)), "~~z~#z"},
		{"cautious bare", qCaut, "\x02\x05\x1b\x7f\x85\x9b", "\x02\x05\x1b\x7f\x85\x9b"},
		{"cautious prefixed", qCaut, "\x03\x11\x13\x1a\x9a\xff", "#C#Q#S#Z#\xda#\xbf"},
		{"always prefixed", qAll, "\x00\x01\r\x80\x81\x8d", "#@#A#M#\xc0#\xc1#\xcd"},
		{"all bare", qAll, "\x02\n\x1f\x7f\x9f\xff", "\x02\n\x1f\x7f\x9f\xff"},
		{"bare applies to wire byte", Quoting{QCTL: '#', QBIN: '&', Bare: allBare()}, "\x82\x81", "&\x02&#A"},
	}
	for _, tc := range tests {
		got, n := tc.q.Encode([]byte("pre:"), []byte(tc.in), 1<<20)
		if string(got) != "pre:"+tc.want || n != len(tc.in) {
			t.Errorf("%s: Encode(%q) = %q, %d; want %q", tc.name, tc.in, got[4:], n, tc.want)
		}
		dec, err := tc.q.Decode([]byte("pre:"), []byte(tc.want))
		if err != nil || string(dec) != "pre:"+tc.in {
			t.Errorf("%s: Decode(%q) = %q, %v; want %q", tc.name, tc.want, dec[4:], err, tc.in)
		}
	}
}

func TestEncodeBudget(t *testing.T) {
	tests := []struct {
		q    Quoting
		in   string
		max  int
		want string
		n    int
	}{
		{qPlain, "abc", 0, "", 0},
		{qPlain, "abc", -5, "", 0},
		{qPlain, "abc", 2, "ab", 2},
		{qPlain, "a\x00b", 2, "a", 1}, // "#@" does not fit after "a"
		{qPlain, "a\x00b", 3, "a#@", 2},
		{qBin, "\x81", 2, "", 0},
		{qBin, "\x81", 3, "&#A", 1},
		{qRept, "zzzz", 2, "zz", 2},         // repeat needs 3: plain copies fill
		{qRept, "zzzz", 3, "~$z", 4},        // whole run
		{qRept, "xzzzz", 3, "xzz", 3},       // run cut by the budget
		{qBinRept, "\x80\x80", 4, "&#@", 1}, // "~\"&#@" needs 5: one unit
	}
	for _, tc := range tests {
		got, n := tc.q.Encode(nil, []byte(tc.in), tc.max)
		if string(got) != tc.want || n != tc.n {
			t.Errorf("Encode(%q, max %d) = %q, %d; want %q, %d", tc.in, tc.max, got, n, tc.want, tc.n)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		q  Quoting
		in string
	}{
		{qPlain, "#"},
		{qPlain, "abc#"},
		{qBin, "&"},
		{qBin, "&#"},
		{qRept, "~"},
		{qRept, "~#"},
		{qRept, "~#a~"},
		{qBinRept, "~\"&"},
		{qBinRept, "~\"&#"},
		{qRept, "~\x01a"},
		{qRept, "~\x7fa"},
		{qRept, "~\xa0a"},
	}
	for _, tc := range tests {
		_, err := tc.q.Decode(nil, []byte(tc.in))
		if !errors.Is(err, ErrBadQuoting) {
			t.Errorf("Decode(%q) error %v, want ErrBadQuoting", tc.in, err)
		}
	}
}

func TestDecodeLenient(t *testing.T) {
	// What the reference Kermits accept, although no encoder makes it.
	tests := []struct {
		q        Quoting
		in, want string
	}{
		{qRept, "~ a", "a"},             // count 0 means 1
		{qRept, "~!a", "a"},             // count 1
		{qPlain, "#a#1#\x01", "a1\x01"}, // QCTL before a non-control letter
		{qPlain, "\x02\x85\xff", "\x02\x85\xff"},
		{qPlain, "#\xc1", "\x81"},
		{qBin, "&\x01", "\x81"}, // 8th-bit prefix on a bare control
		{qRept, "~$~", "~~~~"},  // bare REPT after a count is literal
	}
	for _, tc := range tests {
		got, err := tc.q.Decode(nil, []byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Decode(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestCautiousBare(t *testing.T) {
	b := CautiousBare()
	var bare []int
	for c := range 256 {
		if b[c] {
			bare = append(bare, c)
			if !isControl(byte(c)) {
				t.Errorf("%#x is not a control byte", c)
			}
		}
	}
	// 66 control bytes, 32 prefixed by C-Kermit CAUTIOUS.
	if len(bare) != 66-32 {
		t.Errorf("%d bare bytes: %v", len(bare), bare)
	}
	for _, c := range []byte{0, 1, 3, 13, 17, 19, 26, 0x81, 0x8D, 0x91, 0x93, 0x9A, 0xFF} {
		if b[c] {
			t.Errorf("%#x bare", c)
		}
	}
}

func TestProtect(t *testing.T) {
	q := Quoting{QCTL: '#', Bare: allBare()}
	q.Protect(0x1E)
	q.Protect('\n' | 0x80)
	got, _ := q.Encode(nil, []byte("\x1e\x9e\n\x8a\x02"), 100)
	if want := "#^#\xde#J#\xca\x02"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		q  Quoting
		ok bool
	}{
		{qPlain, true}, {qBinRept, true}, {qZero, true},
		{Quoting{QCTL: '!', QBIN: '`', REPT: '>'}, true},
		{Quoting{QCTL: 'A'}, false},
		{Quoting{QCTL: ' '}, false},
		{Quoting{QCTL: '#', QBIN: '#'}, false},
		{Quoting{QCTL: '#', QBIN: 'Y'}, false},
		{Quoting{QCTL: '#', QBIN: '&', REPT: '&'}, false},
		{Quoting{QCTL: '#', REPT: '#'}, false},
		{Quoting{QCTL: '#', REPT: 0x7F}, false},
	} {
		if err := tc.q.Validate(); (err == nil) != tc.ok {
			t.Errorf("%q/%q/%q: Validate = %v", tc.q.QCTL, tc.q.QBIN, tc.q.REPT, err)
		}
	}
}

// quotingConfigs returns every combination the round trips cover.
func quotingConfigs() []Quoting {
	var qs []Quoting
	for _, qctl := range []byte{'#', '!'} {
		for _, qbin := range []byte{0, '&'} {
			for _, rept := range []byte{0, '~'} {
				for _, bare := range [][256]bool{{}, CautiousBare(), allBare()} {
					qs = append(qs, Quoting{QCTL: qctl, QBIN: qbin, REPT: rept, Bare: bare})
				}
			}
		}
	}
	return qs
}

// sampleInputs returns inputs with different statistics.
func sampleInputs(r *rand.Rand, n int) map[string][]byte {
	uniform := make([]byte, n)
	runs := make([]byte, 0, n)
	text := make([]byte, n)
	special := make([]byte, n)
	for i := range uniform {
		uniform[i] = byte(r.Uint32())
		text[i] = " eeetaoin\nTHE#~&"[r.IntN(16)]
		special[i] = "\x00\x01\r\x80\x81\x8d#~&\xa3\xfe\xa6\xff\x7f"[r.IntN(14)]
	}
	for len(runs) < n {
		c := byte(r.Uint32())
		k := min(1+r.IntN(200), n-len(runs))
		for range k {
			runs = append(runs, c)
		}
	}
	return map[string][]byte{"uniform": uniform, "runs": runs, "text": text, "special": special}
}

// encodeAll encodes src in pieces of at most max bytes, checking each
// piece decodes on its own, and returns the decoded concatenation.
func encodeAll(t testing.TB, q *Quoting, src []byte, max int) []byte {
	var out, piece []byte
	for len(src) > 0 {
		var n int
		piece, n = q.Encode(piece[:0], src, max)
		if len(piece) > max {
			t.Fatalf("piece of %d bytes, max %d", len(piece), max)
		}
		if n == 0 {
			if max >= 2+maxUnit {
				t.Fatalf("no progress with max %d", max)
			}
			return nil
		}
		var err error
		if out, err = q.Decode(out, piece); err != nil {
			t.Fatalf("piece %q: %v", piece, err)
		}
		src = src[n:]
	}
	return out
}

func TestQuotingRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	lengths := []int{0, 1, 2, 3, 93, 94, 95, 1000, MaxLongLen}
	for _, q := range quotingConfigs() {
		name := fmt.Sprintf("%c%q%q/bare%d", q.QCTL, q.QBIN, q.REPT, bareCount(q.Bare))
		for _, n := range lengths {
			for kind, src := range sampleInputs(r, n) {
				for _, max := range []int{5, 91, 4000, MaxLongLen} {
					got := encodeAll(t, &q, src, max)
					if !bytes.Equal(got, src) {
						t.Fatalf("%s %s len %d max %d: round trip differs", name, kind, n, max)
					}
				}
				enc, _ := q.Encode(nil, src, MaxEncodedLen(len(src)))
				checkEncodedSafe(t, &q, enc)
			}
		}
	}
}

func bareCount(b [256]bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

// checkEncodedSafe asserts the guarantees of an encoding: NUL, SOH, CR
// and their twins never bare; with QBIN no 8-bit byte; no control byte
// that Bare does not allow.
func checkEncodedSafe(t testing.TB, q *Quoting, enc []byte) {
	t.Helper()
	for i, c := range enc {
		if alwaysPrefixed(c, false) && isControl(c) {
			t.Fatalf("bare %#02x at %d", c, i)
		}
		if q.QBIN != 0 && c&0x80 != 0 {
			t.Fatalf("8-bit byte %#02x at %d with QBIN", c, i)
		}
		if isControl(c) && !q.Bare[c] {
			t.Fatalf("control byte %#02x at %d not allowed bare", c, i)
		}
	}
}

func TestEncodeNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	src := sampleInputs(r, 4000)["uniform"]
	q := qCaut
	dst := make([]byte, 0, 4000)
	out := make([]byte, 0, 8000)
	q.Encode(dst, src, 4000) // compile the table
	if a := testing.AllocsPerRun(100, func() { q.Encode(dst[:0], src, 4000) }); a != 0 {
		t.Errorf("Encode: %v allocs", a)
	}
	enc, _ := q.Encode(nil, src, 1<<20)
	if a := testing.AllocsPerRun(100, func() { q.Decode(out[:0], enc) }); a != 0 {
		t.Errorf("Decode: %v allocs", a)
	}
}

// TestEncodeStaysInBudget: Encode writes nothing before dst's length or
// past len(dst)+max, and its result is the same whatever the spare
// capacity holds.
func TestEncodeStaysInBudget(t *testing.T) {
	src := []byte("\x80\x80\x80 abc \x01\x01 ~~~~~~~~ #\xff\xa3a")
	for _, q := range quotingConfigs() {
		for max := range 50 {
			buf := bytes.Repeat([]byte{0xEE}, 200)
			got, n := q.Encode(buf[:3], src, max)
			for i, c := range buf {
				if (i < 3 || i >= 3+max) && c != 0xEE {
					t.Fatalf("max %d: byte %d written", max, i)
				}
			}
			want, wn := q.Encode(nil, src, max)
			if !bytes.Equal(got[3:], want) || n != wn {
				t.Fatalf("max %d: %q, %d with scratch room, %q, %d without", max, got[3:], n, want, wn)
			}
		}
	}
}

// TestQuotingConcurrent exercises the table cache from many goroutines
// with more configurations than it holds (run with -race).
func TestQuotingConcurrent(t *testing.T) {
	qs := quotingConfigs()
	src := sampleInputs(rand.New(rand.NewPCG(15, 16)), 500)["special"]
	done := make(chan error)
	for g := range 8 {
		go func() {
			var err error
			for i := range 200 {
				q := qs[(g*7+i)%len(qs)]
				enc, n := q.Encode(nil, src, 1<<20)
				dec, e := q.Decode(nil, enc)
				if e != nil || n != len(src) || !bytes.Equal(dec, src) {
					err = fmt.Errorf("config %d: round trip failed: %v", i, e)
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// quotingFromByte maps a fuzzer byte to a valid Quoting.
func quotingFromByte(b byte) Quoting {
	q := Quoting{QCTL: "#!"[b&1]}
	if b&2 != 0 {
		q.QBIN = '&'
	}
	if b&4 != 0 {
		q.REPT = '~'
	}
	switch b >> 3 & 3 {
	case 1:
		q.Bare = CautiousBare()
	case 2:
		q.Bare = allBare()
	}
	return q
}

func FuzzQuotingDecode(f *testing.F) {
	for _, s := range []string{"", "#", "~", "~#", "~~#@", "&#A", "~\"&#@x", "#\xa3", "~ a", "##~$#~", "\x00\x01\xff"} {
		f.Add([]byte(s), byte(6))
	}
	f.Fuzz(func(t *testing.T, src []byte, cfg byte) {
		q := quotingFromByte(cfg)
		dec, err := q.Decode(nil, src)
		if err != nil {
			if !errors.Is(err, ErrBadQuoting) {
				t.Fatalf("error %v is not ErrBadQuoting", err)
			}
			return
		}
		if len(dec) > maxRepeat*len(src) {
			t.Fatalf("decoded %d bytes from %d", len(dec), len(src))
		}
		// Whatever decodes re-encodes to something that decodes the same.
		enc, n := q.Encode(nil, dec, MaxEncodedLen(len(dec)))
		if n != len(dec) {
			t.Fatalf("Encode consumed %d of %d", n, len(dec))
		}
		again, err := q.Decode(nil, enc)
		if err != nil || !bytes.Equal(again, dec) {
			t.Fatalf("re-encoding %q: %q, %v", dec, again, err)
		}
	})
}

func FuzzQuotingRoundTrip(f *testing.F) {
	f.Add([]byte("hello\r\n"), byte(0), uint16(100))
	f.Add([]byte("\x00\x00\x00\x80\x80\x81\x8d~~~###&&&\xff"), byte(7), uint16(5))
	f.Add(bytes.Repeat([]byte{0xa3}, 200), byte(15), uint16(91))
	f.Add([]byte{0xfe, 0xfe, 0x7e, 0x7e, 0x26}, byte(22), uint16(3))
	f.Fuzz(func(t *testing.T, src []byte, cfg byte, max uint16) {
		q := quotingFromByte(cfg)
		m := int(max%MaxLongLen) + 2 + maxUnit // always room for progress
		got := encodeAll(t, &q, src, m)
		if !bytes.Equal(got, src) && !(len(src) == 0 && len(got) == 0) {
			t.Fatalf("round trip of %q with max %d gave %q", src, m, got)
		}
		enc, _ := q.Encode(nil, src, MaxEncodedLen(len(src)))
		checkEncodedSafe(t, &q, enc)
	})
}

func BenchmarkQuotingEncode(b *testing.B) {
	r := rand.New(rand.NewPCG(17, 18))
	inputs := sampleInputs(r, 64<<10)
	for _, bc := range []struct {
		name  string
		q     Quoting
		input string
	}{
		{"binary/cautious", qCaut, "uniform"},
		{"binary/prefixall", qRept, "uniform"},
		{"binary/qbin", qBinRept, "uniform"},
		{"text/cautious", qCaut, "text"},
		{"runs/cautious", qCaut, "runs"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src := inputs[bc.input]
			dst := make([]byte, 0, 4000)
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				for s := src; len(s) > 0; {
					var n int
					dst, n = bc.q.Encode(dst[:0], s, 4000)
					s = s[n:]
				}
			}
		})
	}
}

func BenchmarkQuotingDecode(b *testing.B) {
	r := rand.New(rand.NewPCG(19, 20))
	inputs := sampleInputs(r, 64<<10)
	for _, bc := range []struct {
		name  string
		q     Quoting
		input string
	}{
		{"binary/cautious", qCaut, "uniform"},
		{"binary/qbin", qBinRept, "uniform"},
		{"text/cautious", qCaut, "text"},
		{"runs/cautious", qCaut, "runs"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src := inputs[bc.input]
			var pieces [][]byte
			for s := src; len(s) > 0; {
				p, n := bc.q.Encode(nil, s, 4000)
				pieces = append(pieces, p)
				s = s[n:]
			}
			dst := make([]byte, 0, 64<<10)
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				dst = dst[:0]
				for _, p := range pieces {
					dst, _ = bc.q.Decode(dst, p)
				}
			}
		})
	}
}

// TestQuotingInvalidConfigsDoNotPanic: Encode and Decode do not validate
// the prefixes, so any byte values must at least be safe.
func TestQuotingInvalidConfigsDoNotPanic(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	src := sampleInputs(r, 300)
	for range 300 {
		q := Quoting{QCTL: byte(r.Uint32()), QBIN: byte(r.Uint32()), REPT: byte(r.Uint32())}
		for _, in := range src {
			enc, _ := q.Encode(nil, in, 1+r.IntN(400))
			q.Decode(nil, enc)
			q.Decode(nil, in)
		}
	}
}

// TestEncodePacketParseDecode runs the whole data path: Encode into a
// packet-sized budget, AppendPacket, a 7-bit line that sets bit 8 at
// random when parity is on, ParsePacket, Decode.
func TestEncodePacketParseDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	budgets := []int{5, 88, 89, 90, 91, 92, 500, 4000, MaxLongLen - 3}
	var wire, data, got []byte
	for _, q := range quotingConfigs() {
		for _, parity := range []bool{false, true} {
			if parity && q.QBIN == 0 {
				continue // a 7-bit line needs 8th-bit prefixing
			}
			f := Frame{Check: CheckType(1 + r.IntN(3)), Parity: parity}
			for kind, src := range sampleInputs(r, 5000) {
				for _, budget := range budgets {
					budget = min(budget, MaxLongLen-f.Check.Len())
					got = got[:0]
					seq := 0
					for s := src; len(s) > 0; seq = (seq + 1) % 64 {
						var n int
						data, n = q.Encode(data[:0], s, budget)
						s = s[n:]
						var err error
						if wire, err = f.AppendPacket(wire[:0], Packet{Seq: seq, Type: 'D', Data: data}); err != nil {
							t.Fatal(err)
						}
						if parity {
							for i := range wire {
								wire[i] |= byte(r.Uint32()) & 0x80
							}
						}
						p, used, err := f.ParsePacket(wire)
						if err != nil || used != len(wire) || p.Seq != seq {
							t.Fatalf("%s budget %d: n=%d err=%v", kind, budget, used, err)
						}
						if got, err = q.Decode(got, p.Data); err != nil {
							t.Fatal(err)
						}
					}
					if !bytes.Equal(got, src) {
						t.Fatalf("%+v parity %v %s budget %d: data differs", q.QBIN, parity, kind, budget)
					}
				}
			}
		}
	}
}
