package control_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/control"
	"kerf/kermit"
)

// discardStore receives files into nothing, so that a benchmark measures
// the network, TLS and the engine rather than the local disk.
type discardStore struct{}

func (discardStore) Create(name string) (kermit.Incoming, error) { return discardFile(name), nil }

type discardFile string

func (f discardFile) Name() string                         { return string(f) }
func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discardFile) Partial() (int64, uint32, error)        { return 0, 0, nil }
func (discardFile) Truncate(int64) error                   { return nil }
func (discardFile) Commit(time.Time, fs.FileMode) error    { return nil }
func (discardFile) Abort(bool) error                       { return nil }

// BenchmarkGetDataChannel fetches a 256 MiB file over loopback with the
// data connections encrypted (TLS 1.3, the default) and in plaintext
// (--plain-data on both sides), with 1 and 4 streams. The control
// connection is TLS in both.
//
//	go test ./control -run '^$' -bench GetDataChannel -benchtime 10x
func BenchmarkGetDataChannel(b *testing.B) {
	const size = 256 << 20
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "big.bin"), rnd(size, 1), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, plain := range []bool{false, true} {
		for _, streams := range []int{1, 4} {
			name := fmt.Sprintf("tls/streams=%d", streams)
			if plain {
				name = fmt.Sprintf("plain/streams=%d", streams)
			}
			b.Run(name, func(b *testing.B) {
				srv := startServerWith(b, root, func(c *control.ServerConfig) { c.AllowPlainData = plain })
				ctx := b.Context()
				cl, err := control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) {
					c.PlainData, c.Streams = plain, streams
				}))
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				// The first GET opens the data channel.
				if err := cl.Get(ctx, "big.bin", false, discardStore{}); err != nil {
					b.Fatal(err)
				}
				if cl.DataEncrypted() == plain {
					b.Fatalf("data encrypted = %v with plain = %v", cl.DataEncrypted(), plain)
				}
				b.SetBytes(size)
				b.ResetTimer()
				for range b.N {
					if err := cl.Get(ctx, "big.bin", false, discardStore{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGetSmallFiles fetches 2,000 files of 16 KiB in 20 directories
// (bench/lan.sh's small case) into nothing, with plaintext data
// connections: what the engine, TLS control packets and the data channel
// cost per file, without the receiver's disk. ns/file and allocs/file
// are per file, both sides together.
//
//	go test ./control -run '^$' -bench GetSmallFiles -benchtime 20x
func BenchmarkGetSmallFiles(b *testing.B) {
	const n, size = 2000, 16 << 10
	root := b.TempDir()
	for i := range n {
		dir := filepath.Join(root, "small", fmt.Sprintf("d%d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), rnd(size, int64(i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	srv := startServerWith(b, root, func(c *control.ServerConfig) { c.AllowPlainData = true })
	ctx := b.Context()
	cl, err := control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) { c.PlainData = true }))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Get(ctx, "small", true, discardStore{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n * size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := cl.Get(ctx, "small", true, discardStore{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/file")
}
