package kermit

import (
	"strings"
	"testing"
	"time"

	"kerf/framing"
)

// The skip set takes lines however the text is cut into writes, drops a
// line too long for a name whole (not spliced with what follows), and
// stops at its bounds.
func TestSkipSink(t *testing.T) {
	when := time.Date(2026, 12, 1, 4, 5, 6, 7, time.UTC)
	line := func(name string) string {
		return string(framing.AppendListingLineExact(nil, framing.ListingEntry{Mode: 0o644, Size: 3, ModTime: when, Name: name}))
	}
	s := &Session{}
	k := &skipSink{s: s}
	text := line("a") + line(strings.Repeat("x", maxSkipName+1)) + line("b/c") + "not a line\n" + line("d e")
	for i := 0; i < len(text); i += 7 {
		k.Write([]byte(text[i:min(i+7, len(text))]))
	}
	if len(s.skip) != 0 {
		t.Fatalf("skip set %v before the text's end", s.skip)
	}
	k.commit()
	if len(s.skip) != 3 || s.skip["b/c"].ModTime != when || s.skip["d e"].Size != 3 {
		t.Fatalf("skip set %v; want a, b/c and d e", s.skip)
	}
	// A line far past any name's length: dropped, and so is nothing else.
	k.Write([]byte(strings.Repeat("y", 3*maxSkipName)))
	k.Write([]byte(line("f")))
	k.Write([]byte(line("g")))
	k.commit()
	if _, ok := s.skip["g"]; !ok || len(s.skip) != 4 {
		t.Errorf("after an overlong line: %d names, g there %v; want 4 with g", len(s.skip), ok)
	}
	// The byte bound.
	s.skipBytes = maxSkipBytes - 1
	k.Write([]byte(line("hh")))
	k.commit()
	if _, ok := s.skip["hh"]; ok {
		t.Error("a name past the byte bound was taken")
	}
}
