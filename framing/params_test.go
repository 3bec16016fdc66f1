package framing

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ckS is C-Kermit 10.0 Beta.08's S packet with default settings in remote
// mode (notes 1.5): ~/ @-#Y3~^>J)0___N"U1@
var ckS = Params{
	MaxLen: 94, Timeout: 15, NPad: 0, PadChar: 0, EOL: '\r',
	QCTL: '#', QBIN: 'Y', Check: 3, REPT: '~',
	Capas:   CapLong | CapWindows | CapAttrs | CapResend | CapLocking,
	Window:  30,
	MaxLenX: 3999,
	WhatAmI: WhatValid | WhatStreaming | WhatLiteral | WhatBinary,
	SysID:   "U1", WhatAmI2: 32,
}

// gkS is G-Kermit 2.01's S packet (notes 1.5): ~' @-#Y3~*!J*0+++J"U1@
var gkS = Params{
	MaxLen: 94, Timeout: 7, NPad: 0, PadChar: 0, EOL: '\r',
	QCTL: '#', QBIN: 'Y', Check: 3, REPT: '~',
	Capas:   CapLong | CapAttrs,
	Window:  1,
	MaxLenX: 4000,
	WhatAmI: WhatValid | WhatStreaming | WhatBinary,
	SysID:   "U1", WhatAmI2: 32,
}

// kerfS is the Send-Init field in testdata/peers/kerf_s.dat, which
// capture.sh offered to C-Kermit and G-Kermit receivers: both ACKed it
// and their debug logs showed every classic field read correctly.
var kerfS = with(ckS, func(p *Params) {
	p.Capas2, p.Window, p.MaxLenX, p.Ext = Cap2DualChannel, 7, 2345, "127.0.0.1:4000/tok"
})

// with returns p modified by f, to write table rows as differences.
func with(p Params, f func(*Params)) Params { f(&p); return p }

func TestDefaultParams(t *testing.T) {
	want := Params{MaxLen: 80, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: 'N', Check: 1, REPT: ' ', Window: 1, MaxLenX: 500}
	if got := DefaultParams(); got != want {
		t.Errorf("DefaultParams() = %+v, want %+v", got, want)
	}
	for _, in := range []string{"", " ", "      ", "        ", "          "} {
		got, err := ParseParams([]byte(in))
		if err != nil || got != want {
			t.Errorf("ParseParams(%q) = %+v, %v; want defaults", in, got, err)
		}
	}
}

// TestParseParamsNotes pins the two S packets quoted in the protocol notes.
func TestParseParamsNotes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Params
	}{
		{`~/ @-#Y3~^>J)0___N"U1@`, ckS},
		{`~' @-#Y3~*!J*0+++J"U1@`, gkS},
	} {
		got, err := ParseParams([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("ParseParams(%q)\n got %+v, %v\nwant %+v", tc.in, got, err, tc.want)
		}
	}
}

// TestParseParamsPeers parses every S, I and Send-Init ACK recorded from
// real C-Kermit 10.0 and G-Kermit 2.01 sessions (testdata/peers).
func TestParseParamsPeers(t *testing.T) {
	ckAck := with(ckS, func(p *Params) { p.WhatAmI = WhatValid | WhatStreaming | WhatBinary }) // 'J'
	ckText := with(ckS, func(p *Params) { p.WhatAmI = WhatValid | WhatStreaming | WhatLiteral; p.WhatAmI2 = 33 })
	ckServerAck := with(ckAck, func(p *Params) { p.WhatAmI |= WhatServer })               // 'K'
	ckServerS := with(ckS, func(p *Params) { p.WhatAmI |= WhatServer })                   // 'O'
	gkManual := with(gkS, func(p *Params) { p.WhatAmI2 = 33 })                            // -i/-T: transfer mode manual
	gkAck := with(gkS, func(p *Params) { p.WhatAmI |= WhatLiteral })                      // 'N'
	noStream := func(p *Params) { p.WhatAmI &^= WhatStreaming }                           // SET STREAMING OFF, -S
	ckBulk := with(ckS, func(p *Params) { p.Window = 31; p.MaxLenX = 9023; noStream(p) }) // srv_ck_opts client

	for _, tc := range []struct {
		session, label string
		want           Params
	}{
		{"ck2ck_bin", "l2r.S0", ckS},
		{"ck2ck_bin", "r2l.Y0", ckAck},
		{"ck2ck_txt", "l2r.S0", ckText},
		{"ck2ck_txt", "r2l.Y0", ckAck},
		{"ck2gk_bin", "r2l.Y0", gkAck},
		{"ck2gk_txt", "r2l.Y0", gkAck},
		{"ck2gk_e9000", "r2l.Y0", with(gkAck, func(p *Params) { p.MaxLenX = 9000; noStream(p) })},
		{"gk2ck_bin", "l2r.S0", gkManual},
		{"gk2ck_bin", "r2l.Y0", ckAck},
		{"gk2ck_txt", "l2r.S0", with(gkManual, func(p *Params) { p.WhatAmI = WhatValid | WhatStreaming })},
		{"gk_S", "l2r.S0", with(gkManual, noStream)},
		{"gk_e9000", "l2r.S0", with(gkManual, func(p *Params) { p.MaxLenX = 9000 })},
		// G-Kermit with -e <= 94 stops its S packet after WINDO.
		{"gk_e80", "l2r.S0", with(DefaultParams(), func(p *Params) {
			p.MaxLen, p.Timeout, p.QBIN, p.Check, p.REPT, p.Capas = 80, 7, 'Y', 3, '~', CapLong|CapAttrs
		})},
		// No sysid in that S, so C-Kermit keeps filename conversion on: WHATAMI
		// bit 4 (WhatLiteral, C-Kermit's WMI_FNAME) set, unlike its usual 'J'.
		{"gk_e80", "r2l.Y0", ckS},
		{"ck_win31", "l2r.S0", with(ckS, func(p *Params) { p.Window = 31 })},
		{"ck_win31", "r2l.Y0", with(ckAck, func(p *Params) { p.Window = 31 })},
		{"ck_rpl9024", "l2r.S0", with(ckS, func(p *Params) { p.MaxLenX = 9023 })},
		{"ck_rpl9024", "r2l.Y0", with(ckAck, func(p *Params) { p.MaxLenX = 9023 })},
		{"ck_bc1", "l2r.S0", with(ckS, func(p *Params) { p.Check = 1 })},
		{"ck_bc1", "r2l.Y0", with(ckAck, func(p *Params) { p.Check = 1 })},
		{"ck_nostream", "l2r.S0", with(ckS, noStream)},
		{"ck_nostream", "r2l.Y0", with(ckAck, noStream)},
		{"ck_mixed", "l2r.S0", with(ckS, func(p *Params) { p.Check, p.Window, p.MaxLenX = 2, 4, 94 })},
		{"ck_mixed", "r2l.Y0", with(ckAck, func(p *Params) { p.MaxLen, p.Check, p.Window, p.MaxLenX = 80, 2, 8, 80 })},
		// 'B' (blank-free type 2) falls back to type 1; '5' (FORCE-3) is 3 with Force3.
		{"ck_bcB", "l2r.S0", with(ckS, func(p *Params) { p.Check = 1 })},
		{"ck_bcB", "r2l.Y0", with(ckAck, func(p *Params) { p.Check = 1 })},
		{"ck_bc5", "l2r.S0", with(ckS, func(p *Params) { p.Check, p.Force3 = 3, true })},
		{"ck_noattr", "l2r.S0", with(ckS, func(p *Params) { p.Timeout = 20; p.Capas &^= CapAttrs })},
		{"ck_noattr", "r2l.Y0", with(ckAck, func(p *Params) { p.Capas &^= CapAttrs })},
		{"ck_resend", "l2r.S0", with(ckS, func(p *Params) { p.WhatAmI2 = 33 })},
		// Server sessions: C-Kermit client (l2r) and server (r2l).
		{"srv_ck", "l2r.I0", ckS},
		{"srv_ck", "r2l.Y0", ckServerAck},
		{"srv_ck", "r2l.S0", ckServerS},
		{"srv_ck", "l2r.Y0", ckAck},
		{"srv_ck", "l2r.S0", ckS},
		{"srv_ck", "r2l.Y0#2", ckServerAck},
		{"srv_ck_opts", "l2r.I0", ckBulk},
		{"srv_ck_opts", "r2l.Y0", with(ckServerAck, func(p *Params) { p.Window, p.MaxLenX = 20, 1999 })},
		{"srv_ck_opts", "r2l.S0", with(ckServerS, func(p *Params) { p.Window, p.MaxLenX = 20, 1999 })},
		{"srv_ck_opts", "l2r.Y0", with(ckBulk, func(p *Params) { p.WhatAmI &^= WhatLiteral })},
		{"srv_gk", "l2r.I0", gkS},
		{"srv_gk", "r2l.Y0", ckServerAck},
		{"srv_gk", "l2r.Y0", gkAck},
		// kerf's own S (second CAPAS byte, Ext) is taken by both.
		{"kerf2ck_ext", "l2r.S0", kerfS},
		{"kerf2ck_ext", "r2l.Y0", ckAck},
		{"kerf2gk_ext", "r2l.Y0", gkAck},
	} {
		data := peerData(t, tc.session, tc.label)
		got, err := ParseParams(data)
		if err != nil || got != tc.want {
			t.Errorf("%s %s: ParseParams(%q)\n got %+v, %v\nwant %+v", tc.session, tc.label, data, got, err, tc.want)
		}
		if !PlausibleParams(data) {
			t.Errorf("%s %s: a real peer's Send-Init %q is not plausible", tc.session, tc.label, data)
		}
	}
}

// TestMarshalParamsReproducesCKermit: for C-Kermit's own Send-Init fields
// (CHKINT "___", check type 1..3) Marshal(ParseParams(x)) is x exactly.
func TestMarshalParamsReproducesCKermit(t *testing.T) {
	n := 0
	for _, session := range []string{"ck2ck_bin", "ck2ck_txt", "ck_win31", "ck_rpl9024", "ck_bc1", "ck_nostream", "ck_mixed", "ck_noattr", "srv_ck", "srv_ck_opts"} {
		for label, pkt := range readPeerSession(t, session) {
			d := pkt.Data
			if !(pkt.Type == 'S' || pkt.Type == 'I' || pkt.Type == 'Y' && pkt.Seq == 0) || !bytes.Contains(d, []byte("0___")) {
				continue
			}
			p, _ := ParseParams(d)
			if got := p.Marshal(); !bytes.Equal(got, d) {
				t.Errorf("%s %s: Marshal(ParseParams(%q)) = %q", session, label, d, got)
			}
			n++
		}
	}
	if n < 20 {
		t.Errorf("only %d C-Kermit Send-Init fields checked", n)
	}
}

func TestMarshalParams(t *testing.T) {
	kerfData, err := os.ReadFile(filepath.Join("testdata", "peers", "kerf_s.dat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    Params
		want string
	}{
		{"C-Kermit", ckS, `~/ @-#Y3~^>J)0___N"U1@`},
		{"G-Kermit fields", gkS, `~' @-#Y3~*!J*0___J"U1@`},
		{"defaults", DefaultParams(), "p% @-#N1  !%90___   "}, // MAXLX 500 = 5*95+25; no WHATAMI, sysid, WHATAMI2
		{"dual channel", with(ckS, func(p *Params) { p.Capas2 = Cap2DualChannel }),
			`~/ @-#Y3~_">J)0___N"U1@`},
		{"third CAPAS byte", with(ckS, func(p *Params) { p.Capas2, p.Capas3 = Cap2DualChannel, 2 }),
			`~/ @-#Y3~_#">J)0___N"U1@`},
		{"fourth CAPAS byte", with(ckS, func(p *Params) { p.Capas2, p.Capas3, p.Capas4 = Cap2DualChannel, 2, 4 }),
			`~/ @-#Y3~_##$>J)0___N"U1@`},
		{"fourth CAPAS byte alone", with(ckS, func(p *Params) { p.Capas4 = 2 }),
			`~/ @-#Y3~_!!">J)0___N"U1@`},
		{"ext", with(ckS, func(p *Params) { p.Capas2 = Cap2DualChannel; p.Ext = "127.0.0.1:4000/tok" }),
			`~/ @-#Y3~_">J)0___N"U1@2127.0.0.1:4000/tok`},
		{"kerf_s.dat", kerfS, string(kerfData)},
		{"no WHATAMI", with(ckS, func(p *Params) { p.WhatAmI, p.SysID, p.WhatAmI2 = 0, "", 0 }),
			`~/ @-#Y3~^>J)0___   `},
		{"clamped", Params{MaxLen: 1000, Timeout: -3, NPad: 99, PadChar: 'x', EOL: 0, QCTL: ' ', QBIN: 'Q', Check: 5,
			REPT: 'A', Capas: 0xFF, Capas2: 1, Window: 64, MaxLenX: 1 << 20, WhatAmI: 0xFF, WhatAmI2: -1},
			"~%~@-#N1 ^?~~0____ _"},
		{"defaulted", Params{MaxLen: 9, Timeout: 0, Window: 0, MaxLenX: 0, Check: 0}, "p% @-#N1  !%90___   "},
	} {
		got := tc.p.Marshal()
		if string(got) != tc.want {
			t.Errorf("%s: Marshal = %q, want %q", tc.name, got, tc.want)
		}
		if _, err := ParseParams(got); err != nil {
			t.Errorf("%s: ParseParams(Marshal) failed: %v", tc.name, err)
		}
	}
}

// TestParseParamsCapas covers CAPAS continuation bytes: kerf's second byte
// lands in Capas2, further ones are skipped, and the fields after them are
// still found.
func TestParseParamsCapas(t *testing.T) {
	for _, tc := range []struct {
		in                            string
		capas, capas2, capas3, capas4 int
		window, maxlx                 int
		sysid                         string
	}{
		{`~/ @-#Y3~^>J)0___N"U1@`, 62, 0, 0, 0, 30, 3999, "U1"},
		{`~/ @-#Y3~_">J)0___N"U1@`, 62, 2, 0, 0, 30, 3999, "U1"},
		{`~/ @-#Y3~_# >J)0___N"U1@`, 62, 2, 0, 0, 30, 3999, "U1"},     // third byte, no bits
		{`~/ @-#Y3~_#">J)0___N"U1@`, 62, 2, 2, 0, 30, 3999, "U1"},     // third byte
		{`~/ @-#Y3~_##$>J)0___N"U1@`, 62, 2, 2, 4, 30, 3999, "U1"},    // fourth byte
		{`~/ @-#Y3~_##### >J)0___N"U1@`, 62, 2, 2, 2, 30, 3999, "U1"}, // many: the fifth on skipped
		{`~/ @-#Y3~! >J)0___N"U1@`, 0, 0, 0, 0, 30, 3999, "U1"},       // continuation, empty second byte
		{`~/ @-#Y3~_`, 62, 0, 0, 0, 1, 500, ""},                       // truncated after continuation
		{`~/ @-#Y3~_#`, 62, 2, 0, 0, 1, 500, ""},
		{"~/ @-#Y3~\x7f>J)0___N\"U1@", 0, 0, 0, 0, 30, 3999, "U1"}, // unusable CAPAS byte: no bits, no continuation
	} {
		p, err := ParseParams([]byte(tc.in))
		if err != nil || p.Capas != tc.capas || p.Capas2 != tc.capas2 || p.Capas3 != tc.capas3 || p.Capas4 != tc.capas4 || p.Window != tc.window || p.MaxLenX != tc.maxlx || p.SysID != tc.sysid {
			t.Errorf("ParseParams(%q) = Capas %d Capas2 %d Capas3 %d Capas4 %d Window %d MaxLenX %d SysID %q, %v; want %d %d %d %d %d %d %q",
				tc.in, p.Capas, p.Capas2, p.Capas3, p.Capas4, p.Window, p.MaxLenX, p.SysID, err, tc.capas, tc.capas2, tc.capas3, tc.capas4, tc.window, tc.maxlx, tc.sysid)
		}
	}
}

// TestParseParamsExt: kerf's Ext field after WHATAMI2 is read back only when
// present and complete.
func TestParseParamsExt(t *testing.T) {
	base := `~/ @-#Y3~_">J)0___N"U1@`
	for _, tc := range []struct{ in, ext string }{
		{base, ""},
		{base + " ", ""},
		{base + "%hello", "hello"},
		{base + "%hello trailing junk", "hello"},
		{base + "%hell", ""},     // count runs past the end
		{base + "\x7fhello", ""}, // unusable count
	} {
		p, err := ParseParams([]byte(tc.in))
		if err != nil || p.Ext != tc.ext || p.WhatAmI2 != 32 || p.Capas2 != Cap2DualChannel {
			t.Errorf("ParseParams(%q): Ext %q WhatAmI2 %d Capas2 %d, %v; want Ext %q", tc.in, p.Ext, p.WhatAmI2, p.Capas2, err, tc.ext)
		}
	}
}

// TestParseParamsOutOfRange: spaces mean "default", unusable bytes are
// defaulted and big values clamped, never a panic or error.
func TestParseParamsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		f    func(Params) bool
	}{
		{"MAXL space", " ", func(p Params) bool { return p.MaxLen == 80 }},
		{"MAXL 9", ")", func(p Params) bool { return p.MaxLen == 80 }},
		{"MAXL 10", "*", func(p Params) bool { return p.MaxLen == 10 }},
		{"MAXL DEL", "\x7f", func(p Params) bool { return p.MaxLen == 80 }},
		{"MAXL 8-bit", "\xfe", func(p Params) bool { return p.MaxLen == 80 }},
		{"TIME space", "~ ", func(p Params) bool { return p.Timeout == 5 }},
		{"TIME ctl", "~\x01", func(p Params) bool { return p.Timeout == 5 }},
		{"TIME 94", "~~", func(p Params) bool { return p.Timeout == 94 }},
		{"NPAD 3", "~/#", func(p Params) bool { return p.NPad == 3 }},
		{"PADC space", "~/  ", func(p Params) bool { return p.PadChar == 0 }},
		{"PADC DEL", "~/ ?", func(p Params) bool { return p.PadChar == 127 }},
		{"PADC ^S", "~/ S", func(p Params) bool { return p.PadChar == 0x13 }},
		{"PADC printable", "~/ a", func(p Params) bool { return p.PadChar == 0 }},
		{"EOL LF", "~/ @*", func(p Params) bool { return p.EOL == '\n' }},
		{"EOL 0", "~/ @ ", func(p Params) bool { return p.EOL == '\r' }},
		{"EOL 32", "~/ @@", func(p Params) bool { return p.EOL == '\r' }},
		{"QCTL space", "~/ @- ", func(p Params) bool { return p.QCTL == '#' }},
		{"QCTL letter", "~/ @-A", func(p Params) bool { return p.QCTL == '#' }},
		{"QCTL other", "~/ @-`", func(p Params) bool { return p.QCTL == '`' }},
		{"QBIN &", "~/ @-#&", func(p Params) bool { return p.QBIN == '&' }},
		{"QBIN space", "~/ @-# ", func(p Params) bool { return p.QBIN == 'N' }},
		{"QBIN letter", "~/ @-#X", func(p Params) bool { return p.QBIN == 'N' }},
		{"CHKT 2", "~/ @-#Y2", func(p Params) bool { return p.Check == 2 }},
		{"CHKT 4", "~/ @-#Y4", func(p Params) bool { return p.Check == 1 }},
		{"CHKT B", "~/ @-#YB", func(p Params) bool { return p.Check == 1 }},
		{"REPT space", "~/ @-#Y3 ", func(p Params) bool { return p.REPT == ' ' }},
		{"REPT letter", "~/ @-#Y3R", func(p Params) bool { return p.REPT == ' ' }},
		{"WINDO 0", "~/ @-#Y3~^ ", func(p Params) bool { return p.Window == 1 }},
		{"WINDO 94", "~/ @-#Y3~^~", func(p Params) bool { return p.Window == 31 }},
		{"WINDO 32", "~/ @-#Y3~^@", func(p Params) bool { return p.Window == 31 }},
		{"MAXLX half", "~/ @-#Y3~^>J", func(p Params) bool { return p.MaxLenX == 500 }},
		{"MAXLX zero", "~/ @-#Y3~^>  ", func(p Params) bool { return p.MaxLenX == 500 }},
		{"MAXLX max", "~/ @-#Y3~^>~~", func(p Params) bool { return p.MaxLenX == 9024 }},
		{"MAXLX bad", "~/ @-#Y3~^>J\x00", func(p Params) bool { return p.MaxLenX == 500 }},
		{"WHATAMI only", "~/ @-#Y3~^>J)0___N", func(p Params) bool { return p.WhatAmI == 46 && p.SysID == "" }},
		{"sysid cut", `~/ @-#Y3~^>J)0___N"U`, func(p Params) bool { return p.SysID == "" && p.WhatAmI2 == 0 }},
		{"sysid empty", `~/ @-#Y3~^>J)0___N @`, func(p Params) bool { return p.SysID == "" && p.WhatAmI2 == 32 }},
		{"sysid long", `~/ @-#Y3~^>J)0___N1abcdefghijklmnopq@`, func(p Params) bool {
			return p.SysID == "abcdefghijklmnopq" && p.WhatAmI2 == 32
		}},
	} {
		p, err := ParseParams([]byte(tc.in))
		if err != nil || !tc.f(p) {
			t.Errorf("%s: ParseParams(%q) = %+v, %v", tc.name, tc.in, p, err)
		}
	}
}

// TestParseParamsTruncation: every prefix of a real Send-Init field parses,
// and the fields it contains keep the values of the whole.
func TestParseParamsTruncation(t *testing.T) {
	full := []byte(`~/ @-#Y3~_">J)0___N"U1@%hello`)
	whole, _ := ParseParams(full)
	for n := 0; n <= len(full); n++ {
		p, err := ParseParams(full[:n])
		if err != nil {
			t.Fatalf("prefix %d: %v", n, err)
		}
		// Fields wholly inside the prefix agree with the whole.
		checks := []struct {
			end int
			ok  bool
		}{
			{1, p.MaxLen == whole.MaxLen}, {2, p.Timeout == whole.Timeout},
			{5, p.EOL == whole.EOL}, {8, p.Check == whole.Check},
			{10, p.Capas == whole.Capas}, {11, p.Capas2 == whole.Capas2},
			{12, p.Window == whole.Window}, {14, p.MaxLenX == whole.MaxLenX},
			{19, p.WhatAmI == whole.WhatAmI}, {22, p.SysID == whole.SysID},
			{23, p.WhatAmI2 == whole.WhatAmI2}, {29, p.Ext == whole.Ext},
		}
		for _, c := range checks {
			if n >= c.end && !c.ok {
				t.Errorf("prefix %q: field ending at %d differs: %+v", full[:n], c.end, p)
			}
		}
	}
}

// randomParams returns Params whose every field is within Marshal's range.
func randomParams(r *rand.Rand) Params {
	prefix := func() byte {
		c := byte(33 + r.IntN(60))
		if c >= 63 {
			c += 33 // 96..126
		}
		return c
	}
	pad := byte(r.IntN(33))
	if pad == 32 {
		pad = 127
	}
	qbin := prefix()
	switch r.IntN(3) {
	case 0:
		qbin = 'Y'
	case 1:
		qbin = 'N'
	}
	rept := byte(' ')
	if r.IntN(2) == 0 {
		rept = prefix()
	}
	str := func(max int) string {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = byte(32 + r.IntN(95))
		}
		return string(b)
	}
	p := Params{
		MaxLen:   10 + r.IntN(85),
		Timeout:  1 + r.IntN(94),
		NPad:     r.IntN(95),
		PadChar:  pad,
		EOL:      byte(1 + r.IntN(31)),
		QCTL:     prefix(),
		QBIN:     qbin,
		Check:    CheckType(1 + r.IntN(3)),
		REPT:     rept,
		Capas:    r.IntN(64) & capBits,
		Capas2:   r.IntN(64) & capBits,
		Capas3:   r.IntN(64) & capBits,
		Capas4:   r.IntN(64) & capBits,
		Window:   1 + r.IntN(31),
		MaxLenX:  1 + r.IntN(MaxLongLen),
		WhatAmI:  r.IntN(64),
		SysID:    str(94),
		WhatAmI2: r.IntN(64),
		Ext:      str(94),
	}
	return p
}

func TestParamsRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		p := randomParams(r)
		b := p.Marshal()
		got, err := ParseParams(b)
		if err != nil || got != p {
			t.Fatalf("round trip %d:\n  in %+v\nwire %q\n out %+v, %v", i, p, b, got, err)
		}
		for _, c := range b {
			if c < ' ' || c > '~' {
				t.Fatalf("Marshal(%+v) = %q: not printable", p, b)
			}
		}
	}
}

// TestMarshalParamsAnyInput: Marshal of arbitrary (even nonsensical) Params
// is printable and stable under a second round trip.
func TestMarshalParamsAnyInput(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		p := Params{
			MaxLen: r.IntN(400) - 100, Timeout: r.IntN(400) - 100, NPad: r.IntN(400) - 100,
			PadChar: byte(r.Uint32()), EOL: byte(r.Uint32()), QCTL: byte(r.Uint32()), QBIN: byte(r.Uint32()),
			Check: CheckType(r.IntN(10) - 2), REPT: byte(r.Uint32()), Capas: int(r.Int32()) - 1<<30,
			Capas2: int(r.Int32()) - 1<<30, Window: r.IntN(200) - 50, MaxLenX: r.IntN(20000) - 500,
			WhatAmI: int(r.Int32()), WhatAmI2: int(r.Int32()),
			SysID: strings.Repeat("s", r.IntN(120)), Ext: strings.Repeat("e", r.IntN(120)),
		}
		b := p.Marshal()
		for _, c := range b {
			if c < ' ' || c > '~' {
				t.Fatalf("Marshal(%+v) = %q: not printable", p, b)
			}
		}
		q, _ := ParseParams(b)
		if b2 := q.Marshal(); !bytes.Equal(b, b2) {
			t.Fatalf("Marshal not stable for %+v:\n%q\n%q", p, b, b2)
		}
	}
}

func FuzzParseParams(f *testing.F) {
	for _, s := range []string{
		`~/ @-#Y3~^>J)0___N"U1@`, `~' @-#Y3~*!J*0+++J"U1@`, `p' @-#Y3~*!`,
		`~/ @-#Y3~_">J)0___N"U1@%hello`, `~/ @-#Y3~_#### >J)0___N"U1@`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseParams(data)
		if err != nil {
			t.Fatalf("ParseParams(%q): %v", data, err)
		}
		if p.MaxLen < 10 || p.MaxLen > 94 || p.Window < 1 || p.Window > 31 || p.MaxLenX < 1 || p.MaxLenX > MaxLongLen ||
			p.Check < 1 || p.Check > 3 || p.EOL < 1 || p.EOL > 31 || len(p.SysID) > 94 || len(p.Ext) > 94 {
			t.Fatalf("ParseParams(%q) = %+v: out of range", data, p)
		}
		// What it parses it can write back, and that reads as the same values.
		b := p.Marshal()
		q, err := ParseParams(b)
		if err != nil || q != p {
			t.Fatalf("ParseParams(%q) = %+v\nMarshal = %q\nParseParams = %+v, %v", data, p, b, q, err)
		}
	})
}

// Send-Init fields as Kermits write them are plausible; damage that a
// 6-bit check let through mostly is not (a character added shifts the
// fields after it).
func TestPlausibleParams(t *testing.T) {
	kerf := string(DefaultParams().Marshal())
	for _, tc := range []struct {
		data string
		want bool
	}{
		{"", true},                               // an empty ACK: all defaults
		{kerf, true},                             // our own
		{"~! @-#Y3~?]Z? ~0___F\"U1@", true},      // kerf's serial S, as on the wire
		{"~! @-#Y5~?]Z? ~0___F\"U1@", true},      // FORCE-3
		{"~* @-#N1", true},                       // a short, plain one
		{"~! @-#YB", true},                       // block check B
		{"\x83~! @-#Y3~?]Z? ~0___F\"U1", false},  // a byte added in front (QA)
		{"~! @-#Y3~?]Z?\xd7 ~0___F\"U1@", false}, // a bit error
		{"~!! @-#Y3~?]Z? ~0___F\"U1", false},     // a character added: CHKT is 'Y'
		{"~! @-#Y3~?]Z? ~0___F\"U1\x00", false},  // a NUL
	} {
		if got := PlausibleParams([]byte(tc.data)); got != tc.want {
			t.Errorf("PlausibleParams(%q) = %v, want %v", tc.data, got, tc.want)
		}
	}
}
