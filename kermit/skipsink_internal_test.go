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
	has := func(s *Session, name string) bool { return s.skip.has(name, 3, when, 0o644) }
	s := &Session{}
	defer s.dropSkip()
	k := newSkipSink(s)
	text := line("a") + line(strings.Repeat("x", maxSkipName+1)) + line("b/c") + "not a line\n" + line("d e")
	for i := 0; i < len(text); i += 7 {
		k.Write([]byte(text[i:min(i+7, len(text))]))
	}
	if s.skip.len() != 0 {
		t.Fatalf("%d names in the skip set before the text's end", s.skip.len())
	}
	k.commit()
	if s.skip.len() != 3 || !has(s, "a") || !has(s, "b/c") || !has(s, "d e") {
		t.Fatalf("skip set of %d; want a, b/c and d e", s.skip.len())
	}
	if s.skip.has("b/c", 4, when, 0o644) || s.skip.has("b/c", 3, when.Add(time.Second), 0o644) || s.skip.has("b/c", 3, when, 0o600) {
		t.Error("a file of another size, time or mode counts as had")
	}
	// A line far past any name's length: dropped, and so is nothing else.
	k.Write([]byte(strings.Repeat("y", 3*maxSkipName)))
	k.Write([]byte(line("f")))
	k.Write([]byte(line("g")))
	k.commit()
	if !has(s, "g") || has(s, "f") || s.skip.len() != 4 {
		t.Errorf("after an overlong line: %d names, g there %v; want 4 with g (f went with the long line)", s.skip.len(), has(s, "g"))
	}
	// A text cut off before its Z adds nothing, and the next one starts
	// afresh.
	k = newSkipSink(s)
	k.Write([]byte(line("cut")))
	k = newSkipSink(s)
	k.Write([]byte(line("h")))
	k.commit()
	if has(s, "cut") || !has(s, "h") {
		t.Error("a text cut off before its Z counted")
	}
	// The session's bound.
	for s.skip.len()+s.skipPending.len() < maxSkip {
		if s.skipPending == nil {
			s.skipPending = newSkipSet(s.skipSeed(), false)
		}
		s.skipPending.m[uint64(s.skipPending.len())+1<<40] = skipFile{}
		skipInUse.Add(1)
	}
	k.Write([]byte(line("past")))
	k.commit()
	if has(s, "past") {
		t.Error("a name past the session's bound was taken")
	}
}

// Skip sets are counted against the process's bound while they are held
// and given back when dropped, pending ones too.
func TestSkipSetsCountedAndGivenBack(t *testing.T) {
	before := skipInUse.Load()
	s := &Session{}
	k := newSkipSink(s)
	when := time.Unix(1e9, 0)
	for i := range 100 {
		k.Write(framing.AppendListingLine(nil, framing.ListingEntry{Mode: 0o644, Size: int64(i), ModTime: when, Name: strings.Repeat("n", i+1)}))
	}
	k.commit()
	k = newSkipSink(s)
	k.Write(framing.AppendListingLine(nil, framing.ListingEntry{Mode: 0o644, Size: 1, ModTime: when, Name: "n"})) // a duplicate
	k.Write(framing.AppendListingLine(nil, framing.ListingEntry{Mode: 0o644, Size: 1, ModTime: when, Name: "pending"}))
	if got := skipInUse.Load() - before; got != 102 {
		t.Fatalf("%d entries counted, want 102", got)
	}
	k.commit()
	if got := skipInUse.Load() - before; got != 101 {
		t.Fatalf("%d entries counted after a duplicate merged, want 101", got)
	}
	s.dropSkip()
	if got := skipInUse.Load() - before; got != 0 {
		t.Fatalf("%d entries still counted after the drop", got)
	}
}

// Sessions without an account (anonymous) hold one session's worth of
// skip entries between them, so that they cannot take the process's
// bound from its users (QA ah); a user's session still gets its own,
// and what they give back is free again.
func TestAccountlessSkipSetsShareABound(t *testing.T) {
	before, beforeA := skipInUse.Load(), skipInUseAccountless.Load()
	when := time.Unix(1e9, 0)
	add := func(s *Session, name string) {
		k := newSkipSink(s)
		k.Write(framing.AppendListingLine(nil, framing.ListingEntry{Mode: 0o644, Size: 1, ModTime: when, Name: name}))
		k.commit()
	}
	anon1, anon2, user := &Session{skipAccountless: true}, &Session{skipAccountless: true}, &Session{}
	defer anon2.dropSkip()
	defer user.dropSkip()
	// The first anonymous session fills the accountless bound.
	add(anon1, "first")
	if !anon1.skip.take(maxSkip - 1 - (beforeA)) {
		t.Fatal("one anonymous session could not take a session's worth")
	}
	add(anon2, "second")
	if anon2.skip.len() != 0 {
		t.Error("a second anonymous session took entries past the accountless bound")
	}
	add(user, "mine")
	if user.skip.len() != 1 {
		t.Error("a user's session was refused while anonymous sessions held their bound")
	}
	anon1.skip.take(-(maxSkip - 1 - beforeA))
	anon1.dropSkip()
	add(anon2, "second")
	if anon2.skip.len() != 1 {
		t.Error("the accountless bound not given back when its sessions dropped theirs")
	}
	anon2.dropSkip()
	user.dropSkip()
	if skipInUse.Load() != before || skipInUseAccountless.Load() != beforeA {
		t.Errorf("counted after every drop: %d, %d accountless; want %d, %d", skipInUse.Load(), skipInUseAccountless.Load(), before, beforeA)
	}
}
