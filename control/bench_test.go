package control_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/control"
	"kerf/filestore"
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

// plainDataClient starts a server of root that allows plaintext data
// connections and returns a client logged in to it that asks for them.
func plainDataClient(b *testing.B, root string) *control.Client {
	srv := startServerWith(b, root, func(c *control.ServerConfig) { c.AllowPlainData = true })
	cl, err := control.Dial(b.Context(), clientConfig(srv, func(c *control.ClientConfig) { c.PlainData = true }))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	return cl
}

// smallTree writes bench/lan.sh's small case, 2,000 files of 16 KiB in
// 20 directories, under dir/small and returns the files as a sending
// client lists them.
func smallTree(b *testing.B, dir string) []kermit.OutgoingFile {
	const n, size = 2000, 16 << 10
	var files []kermit.OutgoingFile
	for i := range n {
		sub := fmt.Sprintf("small/d%d", i/100)
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		name := fmt.Sprintf("%s/f%d", sub, i)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, rnd(size, int64(i)), 0o644); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, kermit.OutgoingFile{
			Name: name, Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode().Perm(), ModeKnown: true,
			Open: func() (kermit.FileReader, error) { return filestore.OpenLocal(p) },
		})
	}
	return files
}

// BenchmarkSendSmallFiles sends bench/lan.sh's small case (2,000 x 16
// KiB) to a server storing into its root, plaintext data connections:
// both ends in one process, so ns/file is per file with the two sharing
// the machine's cores, and allocs/op counts both. Run it with the tree
// on tmpfs, as bench/lan.sh does:
//
//	TMPDIR=/dev/shm go test ./control -run '^$' -bench SendSmallFiles -benchtime 20x
func BenchmarkSendSmallFiles(b *testing.B) {
	files := smallTree(b, b.TempDir())
	root := b.TempDir()
	ctx := b.Context()
	cl := plainDataClient(b, root)
	clear := func() {
		if err := os.RemoveAll(filepath.Join(root, "small")); err != nil {
			b.Fatal(err)
		}
	}
	if err := cl.Send(ctx, files); err != nil {
		b.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "small/d19/f1999")); err != nil || len(got) != 16<<10 {
		b.Fatalf("f1999 after the first send: %d bytes, %v", len(got), err)
	}
	b.SetBytes(int64(len(files)) * 16 << 10)
	b.ReportAllocs()
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		clear()
		b.StartTimer()
		t0 := time.Now()
		if err := cl.Send(ctx, files); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(t0)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*len(files)), "ns/file")
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
	smallTree(b, root)
	ctx := b.Context()
	cl := plainDataClient(b, root)
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
