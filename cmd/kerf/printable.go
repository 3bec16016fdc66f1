package main

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"kerf/framing"
)

// printable is the one way text that kerf did not write itself — file
// names, a peer's error messages and listings — reaches a terminal in
// human output: a malicious server must not be able to move the cursor,
// recolour, retitle or forge lines (docs/security.md, §5). Bytes below
// 0x20 (newline and tab too), DEL and bytes that are not UTF-8 become
// \xHH; C1 controls and what would not be seen as itself
// (framing.Unseen: format characters such as the bidirectional controls,
// which reorder what follows, and zero-width ones, which hide; the line
// and paragraph separators; fillers) become \uHHHH (\UHHHHHHHH past
// U+FFFF). Everything else, accents, CJK and emoji included, is kept. --json
// output is exact instead: encoding/json escapes it.
func printable(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if escaped(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case escaped(r, n) && r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escaped(r, n) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case escaped(r, n):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// escaped reports whether printable shows the rune r (n bytes of UTF-8)
// as an escape.
func escaped(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1, r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case framing.Unseen(r): // format characters, separators, fillers
		return true
	}
	return false
}

// printableLines is printable for multi-line text from a peer (a
// listing): its line ends stay, as "\n" (CRLF, Kermit's canonical form,
// counts as one), and each line is made printable.
func printableLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if body, ok := strings.CutSuffix(l, "\n"); ok {
			lines[i] = printable(strings.TrimSuffix(body, "\r")) + "\n"
		} else {
			lines[i] = printable(l)
		}
	}
	return strings.Join(lines, "")
}
