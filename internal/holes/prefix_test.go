package holes

import (
	"bytes"
	"hash/crc32"
	"testing"
)

// DataPrefix cuts at the first run of zeros aligned to its length, and
// gives the CRC-32C of what lies before it.
func TestDataPrefix(t *testing.T) {
	const run = 16
	data := func(n int) []byte { return bytes.Repeat([]byte{0xa5}, n) }
	zeros := func(n int) []byte { return make([]byte, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name string
		file []byte
		want int64
	}{
		{"empty", nil, 0},
		{"no zeros", data(1000), 1000},
		{"all zeros", zeros(64), 0},
		{"an aligned run", cat(data(3*run), zeros(run), data(run)), 3 * run},
		{"a run not aligned", cat(data(3*run+1), zeros(run), data(run)), 3*run + 1 + run + run},
		// The zeros before an aligned run go with it: a block missing
		// from a point that is not a multiple of run.
		{"a longer run, not aligned", cat(data(3*run+1), zeros(2*run), data(run)), 3*run + 1},
		{"zeros short of a run", cat(data(run), zeros(run-1), data(1), data(run)), 3 * run},
		{"a run at the end", cat(data(2*run), zeros(run)), 2 * run},
		{"a short run at the end", cat(data(2*run), zeros(run-1)), 3*run - 1},
		// Past the first 16 runs, the size of one read.
		{"a run in a later read", cat(data(20*run), zeros(run), data(run)), 20 * run},
		{"the first read's last run", cat(data(15*run), zeros(run), data(run)), 15 * run},
		{"the second read's first run", cat(data(16*run), zeros(run), data(run)), 16 * run},
		{"zeros across two reads, no aligned run", cat(data(15*run+8), zeros(run), data(run)), 17*run + 8},
		{"zeros across two reads, then a run", cat(data(15*run+8), zeros(2*run), data(run)), 15*run + 8},
	} {
		cut, crc, err := DataPrefix(bytes.NewReader(tc.file), int64(len(tc.file)), run, 0)
		want := crc32.Checksum(tc.file[:tc.want], crc32.MakeTable(crc32.Castagnoli))
		if err != nil || cut != tc.want || crc != want {
			t.Errorf("%s: %d, %08x, %v; want %d, %08x", tc.name, cut, crc, err, tc.want, want)
		}
	}
	if _, _, err := DataPrefix(bytes.NewReader(data(10)), 20, run, 0); err == nil {
		t.Error("a file shorter than asked: no error")
	}
	// Runs before from are data.
	file := cat(data(run), zeros(run), data(2*run), zeros(run), data(run))
	cut, crc, err := DataPrefix(bytes.NewReader(file), int64(len(file)), run, 2*run)
	if want := crc32.Checksum(file[:4*run], crc32.MakeTable(crc32.Castagnoli)); err != nil || cut != 4*run || crc != want {
		t.Errorf("from %d: %d, %08x, %v; want %d, %08x", 2*run, cut, crc, err, 4*run, want)
	}
}
