package kermit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// closingReader reads a file in small pieces and closes conn, once,
// after after bytes: the link cut off mid-file.
type closingReader struct {
	*os.File
	n, after int64
	conn     net.Conn
	once     *sync.Once
}

func (r *closingReader) Read(p []byte) (int, error) {
	if len(p) > 2048 {
		p = p[:2048]
	}
	if r.n > r.after {
		r.once.Do(func() { time.Sleep(300 * time.Millisecond); r.conn.Close() })
	}
	n, err := r.File.Read(p)
	r.n += int64(n)
	return n, err
}

// A file cut off mid-data is said to be kept for --resume only where a
// partial is kept: a small one received unnamed keeps nothing, and is
// not said to (review: "kept for --resume", and an empty directory).
func TestCutOffSmallFileSaysNothingKept(t *testing.T) {
	for _, unnamedMax := range []int64{0, filestore.NetUnnamedMax} {
		t.Run(fmt.Sprint("unnamedMax=", unnamedMax), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"s.bin", randomBytes(200<<10, 3)}})
			a, b := link(t, 0, 1)
			var once sync.Once
			p := filepath.Join(src, "s.bin")
			out[0].Open = func() (kermit.FileReader, error) {
				f, err := os.Open(p)
				return &closingReader{File: f, after: 100 << 10, conn: a, once: &once}, err
			}
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			store.UnnamedMax = unnamedMax
			var mu sync.Mutex
			var failed []error
			rcfg := kermit.DefaultConfig()
			rcfg.Events = func(e kermit.Event) {
				if e.Kind == kermit.FileFailed {
					mu.Lock()
					failed = append(failed, e.Err)
					mu.Unlock()
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			recv := kermit.NewSession(b, rcfg)
			send := kermit.NewSession(a, kermit.DefaultConfig())
			rerr := make(chan error, 1)
			go func() { rerr <- recv.Receive(ctx, store) }()
			send.Send(ctx, out)
			a.Close()
			<-rerr
			store.Close()
			ents, _ := os.ReadDir(dst)
			mu.Lock()
			defer mu.Unlock()
			if len(failed) != 1 {
				t.Fatalf("failed events %v, want one for s.bin", failed)
			}
			saysKept := errors.Is(failed[0], kermit.ErrPartialKept)
			if kept := len(ents) == 1; saysKept != kept || kept != (unnamedMax == 0) {
				t.Errorf("said kept %v (%v), %d entries left; want a partial kept and said so only with the temporary name", saysKept, failed[0], len(ents))
			}
		})
	}
}
