package kermit_test

import (
	"fmt"
	"testing"

	"kerf/kermit"
)

// BenchmarkExcludes: QA w's case, 250 patterns that match nothing and
// two that do, against names of a 200,000-file tree three deep.
func BenchmarkExcludes(b *testing.B) {
	var pats []string
	for i := range 250 {
		pats = append(pats, fmt.Sprintf("nomatch%d*.tmp", i))
	}
	pats = append(pats, "d00[0-8]?", "f0009??.dat")
	x, err := kermit.ParseExclusions(pats)
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("t200k/d%03d/f%06d.dat", 100+i%100, i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.Excludes(names[i%len(names)], false)
	}
}
