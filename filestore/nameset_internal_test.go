package filestore

import (
	"fmt"
	"testing"
)

// A NameSet keeps the names committed, and of those under way only the
// ones still being received: a name received, or abandoned, leaves
// underWay (it stayed there at 0, so a get of 100,000 files by a
// wildcard held each name twice), and the checks still hold.
func TestNameSetForgetsWhatIsNoLongerUnderWay(t *testing.T) {
	var n NameSet
	notDir := func() bool { return false }
	for i := range 1000 {
		name := fmt.Sprintf("f%d", i)
		if err := n.begin(name, notDir); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			n.add(name)
		} else {
			n.abandon(name)
		}
	}
	n.begin("twice", notDir)
	n.begin("twice", notDir)
	n.abandon("twice")
	if len(n.underWay) != 1 || n.underWay["twice"] != 1 {
		t.Errorf("under way: %d names (twice: %d); want only twice, once", len(n.underWay), n.underWay["twice"])
	}
	if !n.has("f0") || n.has("f1") {
		t.Errorf("committed: f0 %v, f1 %v; want f0 only", n.has("f0"), n.has("f1"))
	}
	if err := n.free("twice/sub", func() error { return nil }); err == nil {
		t.Error("a directory made where a file is still being received")
	}
	n.abandon("twice")
	if err := n.free("twice/sub", func() error { return nil }); err != nil || len(n.underWay) != 0 {
		t.Errorf("once nothing is under way: %v, %d names left", err, len(n.underWay))
	}
}
