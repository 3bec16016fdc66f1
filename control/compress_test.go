package control_test

import (
	"bytes"
	"strings"
	"testing"

	"kerf/control"
	"kerf/kermit"
)

// compressible is text-like data a fast zstd shrinks severalfold.
func compressible(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString("Nov 30 12:00:00 host kerf[1649]: session ")
		b.WriteString(strings.Repeat("ab", i%13))
		b.WriteString(" stored a file\n")
	}
	return b.Bytes()[:n]
}

// Compression is agreed in the extension field: only when the client
// asks and the server does not refuse, over TLS or plaintext data
// connections, and then both directions compress what pays.
func TestDataCompression(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ask, refuse    bool
		plain          bool
		wantCompressed bool
	}{
		{"asked, TLS", true, false, false, true},
		{"asked, plaintext", true, false, true, true},
		{"asked, server refuses", true, true, false, false},
		{"not asked", false, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, back := t.TempDir(), t.TempDir()
			srv := startServerWith(t, root, func(c *control.ServerConfig) {
				c.RefuseCompression = tc.refuse
				c.AllowPlainData = tc.plain
			})
			ctx := ctxT(t)
			cl := dialT(t, ctx, clientConfig(srv, func(c *control.ClientConfig) {
				c.Compress, c.PlainData, c.Streams = tc.ask, tc.plain, 2
			}))
			text, random := compressible(3<<20+5), rnd(1<<20+3, 9)
			small := compressible(20_000)
			err := cl.Send(ctx, []kermit.OutgoingFile{memFile("text.log", text), memFile("random.bin", random), memFile("small.txt", small)})
			if err != nil {
				t.Fatal(err)
			}
			if cl.DataCompressed() != tc.wantCompressed {
				t.Fatalf("data compressed = %v, want %v", cl.DataCompressed(), tc.wantCompressed)
			}
			checkStored(t, root, map[string][]byte{"text.log": text, "random.bin": random, "small.txt": small})
			sent := cl.DataStats()
			if (sent.CompressedBlocks > 0) != tc.wantCompressed {
				t.Fatalf("client sent %d compressed blocks", sent.CompressedBlocks)
			}
			if tc.wantCompressed && sent.BytesSent > int64(len(random)+len(text)/3+len(small)) {
				t.Fatalf("sent %d bytes: the text was not compressed", sent.BytesSent)
			}
			// And back: the server compresses what it sends.
			getInto(t, ctx, cl, back, "text.log", text)
			if got := cl.DataStats().CompressedReceived > 0; got != tc.wantCompressed {
				t.Fatalf("client received %d compressed blocks, want some: %v", cl.DataStats().CompressedReceived, tc.wantCompressed)
			}
		})
	}
}
