package control

import (
	"sync"
	"testing"
	"time"
)

// A spacedWarning says the first event at once, holds those within its
// time back, and says them, counted, with the last one's peer, once the
// time has passed, though no event comes after them.
func TestSpacedWarningSaysTheLastBurst(t *testing.T) {
	var mu sync.Mutex
	w := spacedWarning{every: 50 * time.Millisecond}
	type line struct {
		n    int
		last string
	}
	said := make(chan line, 10)
	say := func(n int, last string) { said <- line{n, last} }
	w.count(&mu, "a", say)
	if got := <-said; got != (line{1, "a"}) {
		t.Fatalf("first event said %+v", got)
	}
	for _, p := range []string{"b", "c", "d"} {
		w.count(&mu, p, say)
	}
	select {
	case got := <-said:
		t.Fatalf("said %+v within the time", got)
	default:
	}
	select {
	case got := <-said:
		if got != (line{3, "d"}) {
			t.Errorf("the burst said as %+v, want 3 with d", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the burst was never said")
	}
	select {
	case got := <-said:
		t.Errorf("said again: %+v", got)
	case <-time.After(150 * time.Millisecond):
	}
}
