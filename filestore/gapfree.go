package filestore

import (
	"cmp"
	"slices"
	"sync"
)

// gapFree follows the gap-free prefix of a sparse receive's data, so that
// it can be recorded on the partial as it grows (user.kerf.prefix): a
// receiver that dies mid-file (kill -9, a crash) records nothing at its
// end, and a sparse partial could then be trusted only up to its first
// hole, a disk image's first run of zeros, however far past it the data
// came (QA: get --sparse --resume after a kill began again near the
// start). Blocks from several data connections land out of order, so
// the ranges past the prefix wait in pending until it reaches them.
type gapFree struct {
	mu      sync.Mutex
	on      bool       // the file's state is known (new, or cut by Partial or Truncate)
	end     int64      // [0, end) received without a gap
	pending [][2]int64 // received ranges past end, sorted by start
	saved   int64      // the length last recorded on the file
	wrote   bool       // a length was recorded on the file in this session
}

// recordEvery is how much the gap-free prefix grows between records: an
// xattr write per 16 MiB costs nothing beside the data, and a resume
// after a crash sends again at most that much more than it must.
const recordEvery = 16 << 20

// maxPending bounds the ranges held past a gap that does not fill (data
// a connection never delivered): past it, nothing more is recorded.
const maxPending = 4096

// reset says the file holds [0, size) and nothing past it.
func (g *gapFree) reset(size int64) {
	g.mu.Lock()
	// The record the partial had was taken when it was opened: the
	// first growth records again.
	g.on, g.end, g.pending, g.saved = true, size, g.pending[:0], 0
	g.mu.Unlock()
}

// received notes that [off, end) is in the file and, when the gap-free
// prefix has grown by recordEvery since it was last recorded, records
// it (under the lock, so that records never go back).
func (g *gapFree) received(off, end int64, record func(int64)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on || end <= g.end {
		return
	}
	if off > g.end {
		i, _ := slices.BinarySearchFunc(g.pending, off, func(r [2]int64, off int64) int { return cmp.Compare(r[0], off) })
		g.pending = slices.Insert(g.pending, i, [2]int64{off, end})
		if len(g.pending) > maxPending {
			g.on, g.pending = false, nil
		}
		return
	}
	g.end = end
	n := 0
	for _, r := range g.pending {
		if r[0] > g.end {
			break
		}
		g.end = max(g.end, r[1])
		n++
	}
	g.pending = slices.Delete(g.pending, 0, n)
	if g.end-g.saved >= recordEvery {
		g.saved, g.wrote = g.end, true
		record(g.end)
	}
}

// recorded reports whether a length was recorded on the file in this
// session, to be taken off before the file is named.
func (g *gapFree) recorded() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wrote
}

// zeroRun is the run of zeros, aligned to its length, at which a
// partial on a file system without holes or records is cut: a missing
// data block of 128 KiB or more (1 MiB by default) holds one wherever
// it starts, and data rarely does.
const zeroRun = 64 << 10

// gapWindow is how far from a partial's end its blocks may have landed
// out of order: what the data connections have under way at once (a
// stream's socket buffers and blocks in flight, eight streams) is well
// under it. A gap further back would fail the prefix's check, and the
// file go again whole, as before.
var gapWindow int64 = 256 << 20 // (a variable for tests)
