package control

import (
	"net"
	"testing"
	"time"
)

// A throttled address's refusals are said once a minute, with how many
// went unsaid in between; another address is said on its own; the
// addresses remembered are bounded.
func TestThrottleNotes(t *testing.T) {
	var n throttleNotes
	a, b := net.ParseIP("192.0.2.1"), net.ParseIP("192.0.2.2")
	now := time.Unix(1000, 0)
	if say, _ := n.note(a, now); !say {
		t.Fatal("the first refusal of an address is not said")
	}
	for i := range 500 {
		if say, _ := n.note(a, now.Add(time.Duration(i)*100*time.Millisecond)); say {
			t.Fatalf("refusal %d within the minute said", i)
		}
	}
	if say, _ := n.note(b, now.Add(time.Second)); !say {
		t.Error("another address's first refusal not said")
	}
	if say, unsaid := n.note(a, now.Add(throttleNoteEvery)); !say || unsaid != 500 {
		t.Errorf("a minute later: said %v with %d unsaid; want said with 500", say, unsaid)
	}
	later := now.Add(10 * throttleNoteEvery)
	for i := range maxThrottleNotes + 10 {
		n.note(net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), later)
	}
	if len(n.m) > maxThrottleNotes {
		t.Errorf("%d addresses remembered, want at most %d", len(n.m), maxThrottleNotes)
	}
}
