package datachan

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// discardFile is an io.WriterAt that throws the bytes away.
type discardFile struct{}

func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// BenchmarkPathLoopback sends 256 MiB from memory through loopback TCP
// into a discarding WriterAt per iteration.
func BenchmarkPathLoopback(b *testing.B) {
	benchLoopback(b, bytes.NewReader(randomData(1, loopbackSize)))
}

// BenchmarkPathLoopbackFile is BenchmarkPathLoopback from a file, which
// on Linux goes out with sendfile (forced: loopback is copied by
// default): that path's allocations per block.
func BenchmarkPathLoopbackFile(b *testing.B) {
	name := filepath.Join(b.TempDir(), "src")
	if err := os.WriteFile(name, randomData(1, loopbackSize), 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	benchLoopback(b, f, WithSendfile(SendfileAlways))
}

const loopbackSize = 256 << 20

func benchLoopback(b *testing.B, src io.ReaderAt, opts ...Option) {
	const size = loopbackSize
	for _, streams := range []int{1, 2} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			s, r := pathPair(b, streams, nil, opts...)
			ctx := testContext(b)
			id := uint32(0)
			// Warm up the frame pools, then count.
			run := func() {
				id++
				if err := r.Expect(id, discardFile{}, 0, size); err != nil {
					b.Fatal(err)
				}
				if _, err := s.SendFile(ctx, id, src, 0, size); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Wait(ctx, id); err != nil {
					b.Fatal(err)
				}
				s.Release(id)
			}
			run()
			b.SetBytes(size)
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			n := 0
			for b.Loop() {
				run()
				n++
			}
			runtime.ReadMemStats(&after)
			blocks := float64(n) * size / DefaultBlockSize
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/blocks, "allocs/block")
		})
	}
}

// BenchmarkPathSmallFiles moves 16 KiB files through loopback TCP one
// after another the way the engine drives a Path in dual mode: the
// receiver Expects a file and Waits for it while the sender has already
// sent it (the engine pipelines F/A/Z, so a small file's only block
// usually arrives before its Expect and is parked).
func BenchmarkPathSmallFiles(b *testing.B) {
	const size = 16 << 10
	src := bytes.NewReader(randomData(2, size))
	s, r := pathPair(b, 1, nil)
	ctx := testContext(b)
	id := uint32(0)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		id++
		if _, err := s.SendFile(ctx, id, src, 0, size); err != nil {
			b.Fatal(err)
		}
		if err := r.Expect(id, discardFile{}, 0, size); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Wait(ctx, id); err != nil {
			b.Fatal(err)
		}
		s.Release(id)
	}
}
