package framing

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// capturedDate is the mtime of the recorded files (testdata/peers, recorded
// with TZ=UTC): C-Kermit wrote it as local time and kerf reads it as local
// time, whatever the zone the test runs in.
var capturedDate = time.Date(2024, 2, 29, 13, 14, 15, 0, time.Local)

// attrEqual compares Attributes: times by Equal, Extra values by content.
func attrEqual(a, b Attributes) bool {
	if !a.ModTime.Equal(b.ModTime) || len(a.Extra) != len(b.Extra) {
		return false
	}
	for i := range a.Extra {
		if a.Extra[i].Tag != b.Extra[i].Tag || !bytes.Equal(a.Extra[i].Value, b.Extra[i].Value) {
			return false
		}
	}
	a.ModTime, b.ModTime = time.Time{}, time.Time{}
	a.Extra, b.Extra = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestNewAttributes(t *testing.T) {
	a := NewAttributes()
	if a.Length != -1 || a.LengthK != -1 || a.Perm != -1 || !a.ModTime.IsZero() || a.Type != "" || a.Extra != nil {
		t.Errorf("NewAttributes() = %+v", a)
	}
	// Nothing but the end marker.
	if got := a.Marshal(90); len(got) != 1 || string(got[0]) != "@ " {
		t.Errorf("NewAttributes().Marshal(90) = %q", got)
	}
}

// TestParseAttributesPeers parses every A packet recorded from C-Kermit 10.0
// and G-Kermit 2.01 (testdata/peers).
func TestParseAttributesPeers(t *testing.T) {
	ckBin := Attributes{Length: 1000, LengthK: 1, Type: "B8", ModTime: capturedDate, Perm: 0o644, GenericProt: "3", SysID: "U1"}
	ckText := ckBin
	ckText.Type, ckText.Encoding, ckText.Length = "AMJ", "A", 571
	ckResend := ckBin
	ckResend.Disposition = "R"
	gkBin := Attributes{Length: 1000, LengthK: -1, Perm: -1, Type: "B8"}
	gkText := Attributes{Length: 571, LengthK: -1, Perm: -1, Type: "AMJ", Encoding: "A"}
	withEnc := func(enc string) Attributes { a := ckText; a.Encoding = enc; return a }
	srvText := ckBin // C-Kermit client sending t.txt in automatic (binary) mode
	srvText.Length = 571

	for _, tc := range []struct {
		session, label string
		want           Attributes
		ckermit        bool // sent by C-Kermit: Marshal reproduces it byte for byte
	}{
		{"ck2ck_bin", "l2r.A2", ckBin, true},
		{"ck2ck_txt", "l2r.A2", ckText, true},
		{"ck2gk_bin", "l2r.A2", ckBin, true},
		{"ck_latin1", "l2r.A2", withEnc("CI6/100"), true},
		{"ck_utf8", "l2r.A2", withEnc("CI190"), true},
		{"ck_resend", "l2r.A2", ckResend, true},
		{"srv_ck", "r2l.A2", ckBin, true},
		{"srv_ck", "l2r.A2", srvText, true},
		{"gk2ck_bin", "l2r.A2", gkBin, false},
		{"gk2ck_txt", "l2r.A2", gkText, false},
	} {
		data := peerData(t, tc.session, tc.label)
		got := NewAttributes()
		if err := got.Parse(data); err != nil || !attrEqual(got, tc.want) {
			t.Errorf("%s %s: Parse(%q)\n got %+v, %v\nwant %+v", tc.session, tc.label, data, got, err, tc.want)
			continue
		}
		if tc.ckermit {
			if m := got.Marshal(len(data)); len(m) != 1 || !bytes.Equal(m[0], data) {
				t.Errorf("%s %s: Marshal(%d) = %q, want %q", tc.session, tc.label, len(data), m, data)
			}
		}
	}
}

// TestAttrReplyPeers decodes the recorded replies to A packets.
func TestAttrReplyPeers(t *testing.T) {
	for _, tc := range []struct {
		session, label string
		want           AttrReply
	}{
		{"ck2ck_bin", "r2l.Y2", AttrReply{Accept: true, ResumeAt: -1}},
		{"ck2gk_bin", "r2l.Y2", AttrReply{Accept: true, ResumeAt: -1}},
		{"gk2ck_txt", "r2l.Y2", AttrReply{Accept: true, ResumeAt: -1}},
		{"ck_discard", "r2l.Y2", AttrReply{Reasons: "?", ResumeAt: -1}},
		{"ck_update", "r2l.Y2", AttrReply{Reasons: "#", ResumeAt: -1}},
		{"ck_resend", "r2l.Y2", AttrReply{Accept: true, ResumeAt: 400}},
		{"ck_resend_full", "r2l.Y2", AttrReply{Accept: true, ResumeAt: 1000}},
		{"ck_resend_none", "r2l.Y2", AttrReply{Accept: true, ResumeAt: 0}},
	} {
		data := peerData(t, tc.session, tc.label)
		got, err := ParseAttrReply(data)
		if err != nil || got != tc.want {
			t.Errorf("%s %s: ParseAttrReply(%q) = %+v, %v; want %+v", tc.session, tc.label, data, got, err, tc.want)
		}
		// Kerf's own reply is what C-Kermit sent, except for "no file".
		if m := got.Marshal(); !bytes.Equal(m, data) && tc.session != "ck_resend_none" {
			t.Errorf("%s %s: Marshal = %q, want %q", tc.session, tc.label, m, data)
		}
	}
}

func TestAttrReply(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want AttrReply
		err  bool
	}{
		{"", AttrReply{Accept: true, ResumeAt: -1}, false},
		{"Y", AttrReply{Accept: true, ResumeAt: -1}, false},
		{"Yanything", AttrReply{Accept: true, ResumeAt: -1}, false},
		{"N", AttrReply{ResumeAt: -1}, false},
		{"N1", AttrReply{Reasons: "1", ResumeAt: -1}, false},
		{`N"#`, AttrReply{Reasons: `"#`, ResumeAt: -1}, false},
		{`"`, AttrReply{Reasons: `"`, ResumeAt: -1}, false}, // G-Kermit 2.01 type refusal
		{`"x`, AttrReply{Accept: true, ResumeAt: -1}, false},
		{"1#400", AttrReply{Accept: true, ResumeAt: 400}, false},
		{"1#400junk", AttrReply{Accept: true, ResumeAt: 400}, false},
		{"1!0", AttrReply{Accept: true, ResumeAt: 0}, false},
		{"1 ", AttrReply{Accept: true, ResumeAt: 0}, false},
		{`1"-1`, AttrReply{Accept: true, ResumeAt: 0}, false},
		{"13" + "9223372036854775807", AttrReply{Accept: true, ResumeAt: math.MaxInt64}, false},
		{"X", AttrReply{Accept: true, ResumeAt: -1}, false},
		{"1", AttrReply{}, true},
		{"1$400", AttrReply{}, true},
		{"1#4x0", AttrReply{}, true},
		{"1\x7f400", AttrReply{}, true},
		{"13" + "9223372036854775808", AttrReply{}, true},
	} {
		got, err := ParseAttrReply([]byte(tc.in))
		if tc.err {
			if err == nil || !errors.Is(err, ErrBadAttrReply) {
				t.Errorf("ParseAttrReply(%q) = %+v, %v; want ErrBadAttrReply", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseAttrReply(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		r    AttrReply
		want string
	}{
		{NewAttrReply(), ""},
		{AttrReply{}, "N"},
		{AttrReply{Reasons: "?", ResumeAt: 7}, "N?"},
		{AttrReply{Accept: true, Reasons: "ignored", ResumeAt: -1}, ""},
		{AttrReply{Accept: true, ResumeAt: 0}, "1!0"},
		{AttrReply{Accept: true, ResumeAt: 100000}, "1&100000"},
		{AttrReply{Accept: true, ResumeAt: -5}, ""},
	} {
		if got := tc.r.Marshal(); string(got) != tc.want {
			t.Errorf("%+v.Marshal() = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestParseAttributes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Attributes
	}{
		{"empty", "", NewAttributes()},
		{"end only", "@ ", NewAttributes()},
		{"after end", "@ 1#123", with1(func(a *Attributes) { a.Length = 123 })},
		{"unknown tags kept in order", "(#512$!x0\"ab",
			with1(func(a *Attributes) { a.Extra = []Attr{{'(', []byte("512")}, {'$', []byte("x")}, {'0', []byte("ab")}} })},
		{"bad length to Extra", "1#12x!!?",
			with1(func(a *Attributes) { a.Extra = []Attr{{'1', []byte("12x")}, {'!', []byte("?")}} })},
		{"signed length to Extra", "1\"+1",
			with1(func(a *Attributes) { a.Extra = []Attr{{'1', []byte("+1")}} })},
		{"huge length to Extra", "14" + "99999999999999999999",
			with1(func(a *Attributes) { a.Extra = []Attr{{'1', []byte("99999999999999999999")}} })},
		{"max length", "13" + "9223372036854775807", with1(func(a *Attributes) { a.Length = math.MaxInt64 })},
		{"bad mode to Extra", ",#648", with1(func(a *Attributes) { a.Extra = []Attr{{',', []byte("648")}} })},
		{"mode", ",%04755", with1(func(a *Attributes) { a.Perm = 0o4755 })},
		{"bad date to Extra", "#%today", with1(func(a *Attributes) { a.Extra = []Attr{{'#', []byte("today")}} })},
		{"short date", "#&240229", with1(func(a *Attributes) { a.ModTime = time.Date(2024, 2, 29, 0, 0, 0, 0, time.Local) })},
		{"repeat replaces", "\"!A\"\"B8", with1(func(a *Attributes) { a.Type = "B8" })},
		{"empty values", "\" * + - . ", NewAttributes()},
		{"8-bit value", "0\"\xff\x00", with1(func(a *Attributes) { a.Extra = []Attr{{'0', []byte{0xff, 0}}} })},
	} {
		got := NewAttributes()
		if err := got.Parse([]byte(tc.in)); err != nil || !attrEqual(got, tc.want) {
			t.Errorf("%s: Parse(%q) = %+v, %v; want %+v", tc.name, tc.in, got, err, tc.want)
		}
	}
}

// with1 returns NewAttributes modified by f.
func with1(f func(*Attributes)) Attributes { a := NewAttributes(); f(&a); return a }

// TestParseAttributesMerge: several A packets build one Attributes.
func TestParseAttributesMerge(t *testing.T) {
	a := NewAttributes()
	for _, d := range []string{".\"U1\"\"B8", "1$1000(\"16", "1$2000,#600@ "} {
		if err := a.Parse([]byte(d)); err != nil {
			t.Fatalf("Parse(%q): %v", d, err)
		}
	}
	want := with1(func(a *Attributes) {
		a.SysID, a.Type, a.Length, a.Perm = "U1", "B8", 2000, 0o600
		a.Extra = []Attr{{'(', []byte("16")}}
	})
	if !attrEqual(a, want) {
		t.Errorf("merged = %+v, want %+v", a, want)
	}
}

// TestParseAttributesTruncated: a cut-short field is an error and leaves
// the receiver untouched.
func TestParseAttributesTruncated(t *testing.T) {
	full := []byte(".\"U1\"\"B8#120240229 13:14:15!!11$1000,#644-!3@ ")
	before := with1(func(a *Attributes) { a.Type = "keep"; a.Extra = []Attr{{'x', []byte("y")}} })
	for n := 0; n < len(full); n++ {
		a := before
		a.Extra = append([]Attr(nil), before.Extra...)
		err := a.Parse(full[:n])
		boundary := false
		for _, b := range []int{0, 4, 8, 27, 30, 36, 41, 44} {
			boundary = boundary || n == b
		}
		if boundary {
			if err != nil {
				t.Errorf("prefix %d (%q) at an attribute boundary: %v", n, full[:n], err)
			}
			continue
		}
		if !errors.Is(err, ErrBadAttributes) {
			t.Errorf("prefix %d (%q): err = %v, want ErrBadAttributes", n, full[:n], err)
		}
		if !attrEqual(a, before) {
			t.Errorf("prefix %d: receiver changed to %+v", n, a)
		}
	}
	for _, in := range []string{"1", "1\x7f", "1\x1f", "\"\xff"} {
		a := NewAttributes()
		if err := a.Parse([]byte(in)); !errors.Is(err, ErrBadAttributes) {
			t.Errorf("Parse(%q) = %v, want ErrBadAttributes", in, err)
		}
	}
}

func TestMarshalAttributesChunks(t *testing.T) {
	a := Attributes{Length: 1000, LengthK: 1, Type: "B8", ModTime: capturedDate, Perm: 0o644, GenericProt: "3", SysID: "U1",
		Disposition: "R", Extra: []Attr{{'(', []byte("16")}, {'@', nil}, {'0', bytes.Repeat([]byte("x"), 95)}}}
	all := `."U1""B8#120240229 13:14:15!!11$1000,#644-!3+!R("16@ `
	for _, tc := range []struct {
		max  int
		want []string
	}{
		{200, []string{all}},
		{len(all), []string{all}},
		{len(all) - 1, []string{all[:len(all)-2], "@ "}},
		{20, []string{`."U1""B8`, `#120240229 13:14:15`, `!!11$1000,#644-!3+!R`, `("16@ `}},
		{19, []string{`."U1""B8`, `#120240229 13:14:15`, `!!11$1000,#644-!3`, `+!R("16@ `}},
		{18, []string{`."U1""B8!!11$1000`, `,#644-!3+!R("16@ `}}, // the date no longer fits: left out
		{2, []string{"@ "}},
		{1, nil},
		{0, nil},
		{-1, nil},
	} {
		got := a.Marshal(tc.max)
		var gs []string
		for _, c := range got {
			if len(c) > tc.max {
				t.Errorf("Marshal(%d): field %q longer than max", tc.max, c)
			}
			gs = append(gs, string(c))
		}
		if !reflect.DeepEqual(gs, tc.want) {
			t.Errorf("Marshal(%d) =\n %q\nwant\n %q", tc.max, gs, tc.want)
		}
	}
}

func TestAttrTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"20240229 13:14:15", capturedDate},
		{"20240229 13:14", time.Date(2024, 2, 29, 13, 14, 0, 0, time.Local)},
		{"20240229", time.Date(2024, 2, 29, 0, 0, 0, 0, time.Local)},
		{"240229", time.Date(2024, 2, 29, 0, 0, 0, 0, time.Local)},
		{"690101 00:00", time.Date(1969, 1, 1, 0, 0, 0, 0, time.Local)},
		{"680101", time.Date(2068, 1, 1, 0, 0, 0, 0, time.Local)},
		{"991231 23:59:59", time.Date(1999, 12, 31, 23, 59, 59, 0, time.Local)},
		{"2024-02-29 13:14:15", capturedDate},
		{"2024-02-29T13:14:15", capturedDate},
		{"20240229T13:14:15", capturedDate},
		{" 20240229 13:14:15 ", capturedDate},
		{"00010101 00:00:00", time.Date(1, 1, 1, 0, 0, 0, 0, time.Local)},
		{"20240229 13:14:15.5", capturedDate.Add(500 * time.Millisecond)}, // kerf's fraction
		{"20240229 13:14:15.000000001", capturedDate.Add(1)},
		{"20240229 13:14:15.123456789", capturedDate.Add(123456789)},
	} {
		got, err := ParseAttrTime(tc.in)
		if err != nil || !got.Equal(tc.want) || got.Location() != time.Local {
			t.Errorf("ParseAttrTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "2024", "2024022", "20240229 1", "20240229 13", "20240229 13:1", "20240229 13:14:1",
		"20240229 13:14:15 x", "20241329", "20240230", "20230229", "20240229 24:00", "20240229 23:60", "20240229 23:59:60",
		"20240229x13:14", "2024-2-29", "2024-02-29x", "-0240229", "20240229  13:14", "yyyymmdd",
		"20240229 13:14:15.", "20240229 13:14:15.1234567890", "20240229 13:14.5", "20240229 13:14:15.5x", "20240229 13:14:15,5"} {
		if got, err := ParseAttrTime(in); err == nil {
			t.Errorf("ParseAttrTime(%q) = %v, want error", in, got)
		}
	}
	if got := FormatAttrTime(capturedDate.UTC()); got != "20240229 13:14:15" {
		t.Errorf("FormatAttrTime = %q", got)
	}
}

func randomAttributes(r *rand.Rand) Attributes {
	str := func() string {
		b := make([]byte, r.IntN(maxAttrValue+1))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return string(b)
	}
	a := NewAttributes()
	if r.IntN(4) > 0 {
		a.Length = r.Int64()
	}
	if r.IntN(4) > 0 {
		a.LengthK = r.Int64N(1 << 40)
	}
	if r.IntN(4) > 0 {
		a.Perm = r.IntN(0o10000)
	}
	if r.IntN(4) > 0 {
		a.ModTime = time.Date(1970+r.IntN(200), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.Local)
	}
	a.Type, a.Encoding, a.Disposition, a.GenericProt, a.SysID = str(), str(), str(), str(), str()
	for n := r.IntN(4); n > 0; n-- {
		tag := byte(r.Uint32())
		switch tag {
		case '!', '"', '#', '*', '+', ',', '-', '.', '1', '@':
			tag = '$'
		}
		a.Extra = append(a.Extra, Attr{Tag: tag, Value: []byte(str())})
	}
	return a
}

func TestAttributesRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5000; i++ {
		a := randomAttributes(r)
		max := 96 + r.IntN(400)
		got := NewAttributes()
		for _, d := range a.Marshal(max) {
			if len(d) > max {
				t.Fatalf("Marshal(%d) field of %d bytes", max, len(d))
			}
			if err := got.Parse(d); err != nil {
				t.Fatalf("Parse(%q): %v", d, err)
			}
		}
		if !attrEqual(got, a) {
			t.Fatalf("round trip %d (max %d):\n  in %+v\n out %+v", i, max, a, got)
		}
	}
}

func FuzzParseAttributes(f *testing.F) {
	for _, s := range []string{
		".\"U1\"\"B8#120240229 13:14:15!!11$1000,#644-!3@ ",
		".\"U1\"#AMJ*'CI6/100#120240229 13:14:15!!11#571,#644-!3@ ",
		"\"\"B81$1000", "\"#AMJ*!A1#571", "+!R@ ", "(#16$!x", "1#12x", "#&240229", "1", "",
	} {
		f.Add([]byte(s), 90)
	}
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		a := NewAttributes()
		if err := a.Parse(data); err != nil {
			if !errors.Is(err, ErrBadAttributes) {
				t.Fatalf("Parse(%q): %v does not wrap ErrBadAttributes", data, err)
			}
			if !attrEqual(a, NewAttributes()) {
				t.Fatalf("failed Parse(%q) changed the receiver: %+v", data, a)
			}
			return
		}
		// What it parses it can write back: at any max that holds the
		// largest attribute, Marshal then Parse gives the same values.
		max = 96 + max%1000
		if max < 96 {
			max += 1000
		}
		b := NewAttributes()
		for _, d := range a.Marshal(max) {
			if len(d) > max {
				t.Fatalf("Marshal(%d) field of %d bytes", max, len(d))
			}
			if err := b.Parse(d); err != nil {
				t.Fatalf("Parse(Marshal) of %q: %v", d, err)
			}
		}
		if !attrEqual(a, b) {
			t.Fatalf("Parse(%q) = %+v\nafter Marshal/Parse %+v", data, a, b)
		}
	})
}

func FuzzParseAttrReply(f *testing.F) {
	for _, s := range []string{"", "Y", "N", "N?", "N#", `"`, "1#400", `1"-1`, "1$1000", "1", "1$40", "X"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseAttrReply(data)
		if err != nil {
			if !errors.Is(err, ErrBadAttrReply) {
				t.Fatalf("ParseAttrReply(%q): %v does not wrap ErrBadAttrReply", data, err)
			}
			return
		}
		if r.ResumeAt < -1 || !r.Accept && r.ResumeAt != -1 {
			t.Fatalf("ParseAttrReply(%q) = %+v", data, r)
		}
		m := r.Marshal()
		r2, err := ParseAttrReply(m)
		if err != nil || r2 != r {
			t.Fatalf("ParseAttrReply(%q) = %+v; Marshal %q; ParseAttrReply %+v, %v", data, r, m, r2, err)
		}
	})
}

// With Zone set (two kerf peers: UTC), '#' is written and read in that
// zone whatever the local zone is.
func TestAttributesZone(t *testing.T) {
	saved := time.Local
	defer func() { time.Local = saved }()
	time.Local = time.FixedZone("UTC+9", 9*3600)
	mt := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAttributes()
	a.Zone, a.ModTime = time.UTC, mt
	wire := a.Marshal(90)[0]
	if !bytes.Contains(wire, []byte("#1"+"20200101 00:00:00")) {
		t.Fatalf("UTC date not on the wire: %q", wire)
	}
	local := NewAttributes()
	local.ModTime = mt
	if w := local.Marshal(90)[0]; !bytes.Contains(w, []byte("20200101 09:00:00")) {
		t.Fatalf("local date (UTC+9) not on the wire: %q", w)
	}
	b := NewAttributes()
	b.Zone = time.UTC
	if err := b.Parse(wire); err != nil || !b.ModTime.Equal(mt) {
		t.Fatalf("parsed %v, %v; want %v", b.ModTime, err, mt)
	}
	c := NewAttributes()
	if err := c.Parse(wire); err != nil || !c.ModTime.Equal(mt.Add(-9*time.Hour)) {
		t.Fatalf("read as local: %v, %v", c.ModTime, err)
	}

	// To a kerf peer that reads them, the fraction of a second; none
	// when it is zero, and none without SubSecond (C-Kermit's form).
	ns := NewAttributes()
	ns.Zone, ns.SubSecond, ns.ModTime = time.UTC, true, mt.Add(123456789)
	w := ns.Marshal(90)[0]
	if !bytes.Contains(w, []byte("#;"+"20200101 00:00:00.123456789")) {
		t.Fatalf("fraction not on the wire: %q", w)
	}
	back := NewAttributes()
	back.Zone = time.UTC
	if err := back.Parse(w); err != nil || !back.ModTime.Equal(ns.ModTime) {
		t.Fatalf("parsed %v, %v; want %v", back.ModTime, err, ns.ModTime)
	}
	ns.ModTime = mt
	if w := ns.Marshal(90)[0]; !bytes.Contains(w, []byte("#1"+"20200101 00:00:00")) {
		t.Fatalf("a whole second with SubSecond: %q", w)
	}
	ns.SubSecond, ns.ModTime = false, mt.Add(123456789)
	if w := ns.Marshal(90)[0]; !bytes.Contains(w, []byte("#1"+"20200101 00:00:00")) {
		t.Fatalf("fraction without SubSecond: %q", w)
	}
}

// Attributes not understood are kept up to MaxExtraAttrs, over any number
// of Parse calls; past it Parse fails, leaving a as it was.
func TestParseBoundsExtra(t *testing.T) {
	one := []byte("Z#abc") // an unknown tag
	a := NewAttributes()
	for i := range MaxExtraAttrs {
		if err := a.Parse(one); err != nil {
			t.Fatalf("attribute %d: %v", i+1, err)
		}
	}
	if err := a.Parse(one); !errors.Is(err, ErrBadAttributes) {
		t.Errorf("attribute %d: %v; want ErrBadAttributes", MaxExtraAttrs+1, err)
	}
	if len(a.Extra) != MaxExtraAttrs {
		t.Errorf("%d kept; want %d", len(a.Extra), MaxExtraAttrs)
	}
}
