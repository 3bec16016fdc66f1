package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"kerf/kermit"
)

// BenchmarkListLocalTree lists a tree of 2,000 files in 20 directories,
// unsized, as a quiet recursive send does while it dials, and makes
// the send's list of it.
func BenchmarkListLocalTree(b *testing.B) {
	root := filepath.Join(b.TempDir(), "small")
	for i := range 2000 {
		d := filepath.Join(root, "d"+strconv.Itoa(i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		l, err := listLocalSized([]string{root}, true, kermit.Exclusions{}, false)
		if err != nil || l.regular != 2000 {
			b.Fatal(l, err)
		}
		n := 0
		for range l.list(nil).All {
			n++
		}
		if n != 2021 {
			b.Fatal(n)
		}
	}
}
