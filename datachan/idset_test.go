package datachan

import (
	"math/rand/v2"
	"testing"
)

// idSet holds exactly what was added, in any order, and ids added in
// order take one range.
func TestIDSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s idSet
		want := map[uint32]bool{}
		n := 1 + rng.IntN(300)
		for range n {
			id := uint32(rng.IntN(400))
			if round%2 == 0 {
				id = uint32(rng.IntN(40)) // dense: ranges join
			}
			s.add(id)
			want[id] = true
		}
		for id := uint32(0); id < 410; id++ {
			if s.has(id) != want[id] {
				t.Fatalf("round %d: has(%d) = %v, want %v (ranges %v)", round, id, s.has(id), want[id], s.r)
			}
		}
		for i := 1; i < len(s.r); i++ {
			if s.r[i-1].hi >= s.r[i].lo || s.r[i].lo >= s.r[i].hi {
				t.Fatalf("round %d: ranges not sorted, disjoint and apart: %v", round, s.r)
			}
		}
	}
	var s idSet
	for id := uint32(1); id <= 100000; id++ {
		s.add(id)
	}
	if len(s.r) != 1 || !s.has(1) || !s.has(100000) || s.has(0) || s.has(100001) {
		t.Fatalf("ids in order: %v", s.r)
	}
	if s.add(^uint32(0)) || s.has(^uint32(0)) {
		t.Fatal("the largest id cannot be held")
	}
}
