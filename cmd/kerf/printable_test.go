package main

import "testing"

// Names and text from a peer reach the terminal with every control
// escaped, newline and tab included (a name with a newline forged lines
// of output; the old mask kept them), and ordinary Unicode untouched.
func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain name.txt", "plain name.txt"},
		{"e\x1b[31mRED\x1b[0m", `e\x1b[31mRED\x1b[0m`},
		{"cr\rname", `cr\x0dname`},
		{"two\nlines", `two\x0alines`},
		{"a\tb", `a\x09b`},
		{"bell\x07nul\x00", `bell\x07nul\x00`},
		{"del\x7f", `del\x7f`},
		{"csi\xc2\x9b31m", `csi\u009b31m`},
		{"c1\u0085nel", `c1\u0085nel`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{"rlo\u202etxt.exe", `rlo\u202etxt.exe`},
		{"ls\u2028sep", `ls\u2028sep`},
		// Unseen as themselves (QA r: two names looked alike).
		{"zw\u200bsp", `zw\u200bsp`},
		{"soft\u00adhy", `soft\u00adhy`},
		{"bom\ufeff", `bom\ufeff`},
		{"wj\u2060", `wj\u2060`},
		{"fill\u3164er", `fill\u3164er`},
		{"tag\U000e0041", `tag\U000e0041`},
		{"ünïcode ñame 日本語 🙂 ä\u00a0b", "ünïcode ñame 日本語 🙂 ä\u00a0b"},
		{"\ufffd is a real character", "\ufffd is a real character"},
	} {
		if got := printable(c.in); got != c.want {
			t.Errorf("printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A listing keeps its line ends (LF or CRLF, printed as LF); inside a
// line every control is escaped.
func TestPrintableLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\nb\n", "a\nb\n"},
		{"a\r\nb\r\n", "a\nb\n"},
		{"x\ty\n\x1b[2Jz", "x\\x09y\n\\x1b[2Jz"},
		{"cr\rmid\n", "cr\\x0dmid\n"},
		{"", ""},
	} {
		if got := printableLines(c.in); got != c.want {
			t.Errorf("printableLines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
