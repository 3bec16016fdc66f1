package kermit_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// A stream (standard input: no length announced) cut off mid-way is
// not kept at a kerf receiver, since no resume can go on with it, and
// the sender says so (QA: the partial held the full disk, and the words
// offered --resume); a file of known length cut off so is kept, and
// --resume offered, as before.
func TestStreamCutOffKeepsNoPartial(t *testing.T) {
	data := randomBytes(200_000, 4)
	for _, tc := range []struct {
		name  string
		size  int64
		kept  bool
		words string
	}{
		{"stream", -1, false, "cannot be resumed"},
		{"file", int64(len(data)), true, "--resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			out := []kermit.OutgoingFile{{Name: "s.bin", Size: tc.size, Open: func() (kermit.FileReader, error) {
				return streamReader{bytes.NewReader(data)}, nil
			}}}
			a, b := link(t, 0, 1)
			recv := kermit.NewSession(b, kermit.DefaultConfig())
			defer recv.Close()
			cfg := kermit.DefaultConfig()
			var log eventLog
			cfg.Events = log.add
			send := kermit.NewSession(a, cfg)
			defer send.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rerr := make(chan error, 1)
			go func() { rerr <- recv.Receive(ctx, failingStore{store, 50_000}) }()
			if err := send.Send(ctx, out); err == nil {
				t.Fatal("send: no error, the receiver's disk full")
			}
			<-rerr
			_, err = os.Stat(dst + "/.s.bin.kerf-part")
			if kept := err == nil; kept != tc.kept {
				t.Errorf("partial kept: %v, want %v", kept, tc.kept)
			}
			why := log.failures()
			if len(why) != 1 || !strings.Contains(why[0], tc.words) {
				t.Errorf("failures %q; want one saying %q", why, tc.words)
			}
		})
	}
}
