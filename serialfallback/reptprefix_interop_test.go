package serialfallback_test

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/internal/peertest"
	"kerf/kermit"
	"kerf/serialfallback"
)

// repeatPrefixFiles hold what a repeat prefix other than '~' trips on:
// bare '~' and '`' before printable characters and at a packet's end,
// and long runs a repeat count shortens.
func repeatPrefixFiles() []peertest.File {
	var tildes bytes.Buffer
	for i := range 400 {
		tildes.WriteString("~Zq ~B`A~~``x")
		tildes.WriteByte(byte(i))
	}
	tildes.WriteString("~")
	return []peertest.File{
		{Name: "tildes.bin", Data: tildes.Bytes()},
		{Name: "runs.bin", Data: append(bytes.Repeat([]byte{0}, 150_000), bytes.Repeat([]byte("~"), 50_000)...)},
	}
}

// countingLine counts the bytes read from the line.
type countingLine struct {
	io.ReadWriter
	read atomic.Int64
}

func (c *countingLine) Read(p []byte) (int, error) {
	n, err := c.ReadWriter.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// A C-Kermit whose repeat prefix is not '~' (SET REPEAT PREFIX 96) has
// its own prefix taken when it proposes it, as C-Kermit takes the
// proposer's, and proposed back to it in this side's later Send-Inits
// (QA ae: kerf answered '~', after which C-Kermit did no repeat counts,
// and, acting as server's client, sent bare '~' that kerf read as
// counts: a 1,382-byte file stored as 7,738 bytes, exit 0).
func TestCKermitOwnRepeatPrefix(t *testing.T) {
	files := repeatPrefixFiles()
	t.Run("ckermit-sends", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		link, err := serialfallback.Open(serialfallback.LinkConfig{Device: a, Speed: fastBaud})
		if err != nil {
			t.Fatal(err)
		}
		defer link.Close()
		line := &countingLine{ReadWriter: link}
		store, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := kermit.NewSession(line, kerfConfig(setting{31, 4096, 3}, fastBaud))
		defer s.Close()
		done := make(chan error, 1)
		go func() { done <- s.Receive(ctx, store) }()
		ck := peertest.CKermit(t, b, "set repeat prefix 96\ncd "+src+"\n"+sendList(files), src)
		if err := ck.Wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("kerf receive: %v", err)
		}
		peertest.CheckFiles(t, dst, files)
		// 205 KB, 150 KB of them NULs (two bytes each, prefixed), is
		// 350 KB on the line without repeat counts; with them runs.bin
		// is a few hundred bytes.
		if n := line.read.Load(); n > 50_000 {
			t.Errorf("%d bytes came over the line for 205 KB of runs: repeat counts were not used", n)
		}
	})
	t.Run("ckermit-client", func(t *testing.T) {
		root, local := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, root, files[:1])
		up := peertest.File{Name: "up.bin", Data: files[0].Data[:1382]}
		peertest.WriteFiles(t, local, []peertest.File{up})
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		fsys, err := filestore.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer fsys.Close()
		done := runKerf(t, a, fastBaud, kerfConfig(setting{31, 4096, 3}, fastBaud), func(ctx context.Context, s *kermit.Session) error {
			return s.Serve(ctx, fsys)
		})
		script := "set repeat prefix 96\ncd " + local + "\nget tildes.bin\nsend up.bin\nfinish"
		ck := peertest.CKermit(t, b, script, local)
		if err := ck.Wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "server")
		peertest.CheckFiles(t, local, files[:1])
		peertest.CheckFiles(t, root, []peertest.File{up})
	})
}
