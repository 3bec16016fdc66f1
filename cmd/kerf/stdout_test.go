package main

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// A file fetched to standard output goes out in order whatever order its
// blocks come in: blocks ahead of a missing one wait (in a temporary
// file) and follow it; a block sent again (a damaged one's resend, a
// take-over) is not written twice.
func TestPipeSinkWritesInOrder(t *testing.T) {
	data := make([]byte, 40000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	type w struct{ off, end int }
	for _, c := range []struct {
		name   string
		writes []w
	}{
		{"in order", []w{{0, 10000}, {10000, 20000}, {20000, 40000}}},
		{"two streams", []w{{10000, 20000}, {0, 10000}, {30000, 40000}, {20000, 30000}}},
		{"reversed", []w{{30000, 40000}, {20000, 30000}, {10000, 20000}, {0, 10000}}},
		{"a block sent again", []w{{0, 10000}, {20000, 30000}, {0, 10000}, {10000, 20000}, {20000, 30000}, {30000, 40000}}},
		{"overlapping", []w{{5000, 25000}, {20000, 40000}, {0, 10000}}},
		{"an early block sent again late", []w{{0, 20000}, {20000, 40000}, {0, 10000}, {10000, 30000}}},
		{"held block sent again", []w{{20000, 30000}, {20000, 30000}, {30000, 40000}, {0, 20000}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			p := newPipeSink(&out, t.TempDir())
			for _, x := range c.writes {
				if n, err := p.WriteAt(data[x.off:x.end], int64(x.off)); err != nil || n != x.end-x.off {
					t.Fatalf("WriteAt(%d..%d) = %d, %v", x.off, x.end, n, err)
				}
			}
			if err := p.Commit(time.Time{}, 0o644); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("out: %d bytes, not the file's %d in order", out.Len(), len(data))
			}
			size, crc, _ := p.Partial()
			if size != int64(len(data)) || crc != crc32.Checksum(data, castagnoli) {
				t.Errorf("Partial() = %d, %08x; want %d, %08x", size, crc, len(data), crc32.Checksum(data, castagnoli))
			}
		})
	}
}

// What went out cannot be taken back: beginning again before it fails,
// and a commit with a gap says the output is incomplete.
func TestPipeSinkCannotTakeBack(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	p := newPipeSink(&out, dir)
	p.WriteAt([]byte("hello"), 0)
	p.WriteAt([]byte("world"), 10)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the held blocks' file has a name: %v", ents)
	}
	if err := p.Truncate(0); err == nil || !strings.Contains(err.Error(), "went to standard output") {
		t.Errorf("Truncate(0) after 5 bytes went out: %v", err)
	}
	if err := p.Commit(time.Time{}, 0o644); err == nil || !strings.Contains(err.Error(), "bytes 5 to 10 never came") {
		t.Errorf("Commit with a gap: %v", err)
	}
	// Cut back to what went out: the held bytes are forgotten.
	if err := p.Truncate(5); err != nil {
		t.Fatalf("Truncate(5): %v", err)
	}
	p.WriteAt([]byte("there"), 5)
	if err := p.Commit(time.Time{}, 0o644); err != nil || out.String() != "hellothere" {
		t.Errorf("after Truncate(5): %q, %v", out.String(), err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A reader that went away fails the file, and every later write.
func TestPipeSinkWriterFails(t *testing.T) {
	p := newPipeSink(failingWriter{}, t.TempDir())
	if _, err := p.WriteAt([]byte("x"), 0); err == nil || !strings.Contains(err.Error(), "standard output: broken pipe") {
		t.Fatalf("WriteAt to a broken writer: %v", err)
	}
	if _, err := p.WriteAt([]byte("y"), 1); err == nil {
		t.Error("a later WriteAt succeeded")
	}
	if err := p.Commit(time.Time{}, 0o644); err == nil {
		t.Error("Commit succeeded")
	}
}
