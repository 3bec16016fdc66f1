package kermit

import (
	"sync"
	"testing"
)

// A file's progress counted by several goroutines at once (the data
// connections' writers each read the block they send) is reported in
// order: each report larger than the one before, the last the total.
func TestProgressNeverGoesBack(t *testing.T) {
	var mu sync.Mutex
	var got []int64
	s := &Session{cfg: Config{Events: func(e Event) {
		mu.Lock()
		got = append(got, e.Bytes)
		mu.Unlock()
	}}}
	report, flush := s.progress("f", 1<<30, 0, true)
	const workers, blocks, block = 8, 400, 64 << 10
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range blocks {
				report(block)
			}
		})
	}
	wg.Wait()
	if len(got) == 0 {
		t.Fatal("no progress reported")
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("report %d: %d bytes after %d", i, got[i], got[i-1])
		}
	}
	if total := int64(workers * blocks * block); got[len(got)-1] > total || total-got[len(got)-1] >= 256<<10 {
		t.Errorf("last report %d bytes of %d", got[len(got)-1], total)
	}
	// A flush reports the exact count, once; then nothing new.
	report(1000)
	n := len(got)
	flush()
	flush()
	if want := int64(workers*blocks*block + 1000); len(got) != n+1 || got[n] != want {
		t.Errorf("after a flush: reports %d, last %d bytes; want one more, of %d", len(got)-n, got[len(got)-1], want)
	}
}
