package serialfallback_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/internal/peertest"
	"kerf/kermit"
)

// A C-Kermit client killed in the middle of a transfer and run again on
// the same line finds the kerf server listening: its commands are
// answered at once, not after minutes of NAKs and silence, and a RESEND
// (or REGET) completes the file. (The server stayed in the dead
// transfer: it read the new S as a packet ahead in its window, NAKed
// the gap, and took the new client's type-1 E for damage.)
func TestServerHearsARestartedClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   bool // C-Kermit sends; else it gets
	}{{"killed sending", true}, {"killed getting", false}} {
		t.Run(tc.name, func(t *testing.T) {
			data := peertest.RandomBytes(600_000, 41)
			root, local := t.TempDir(), t.TempDir()
			src, dst := filepath.Join(local, "big.bin"), filepath.Join(root, "big.bin")
			watch := filepath.Join(root, filestore.TempName("big.bin"))
			if tc.up {
				os.WriteFile(src, data, 0o644)
			} else {
				os.WriteFile(dst, data, 0o644)
				src, dst = dst, src
				watch = filepath.Join(local, "big.bin")
			}
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			fsys, err := filestore.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			cfg := kerfConfig(setting{31, 4096, 3}, fastBaud)
			cfg.Resume = true
			done := runKerf(t, a, fastBaud, cfg, func(ctx context.Context, s *kermit.Session) error {
				s.SetKeepServing(true)
				return s.Serve(ctx, fsys)
			})
			cmd := "send big.bin"
			if !tc.up {
				cmd = "set file incomplete keep\nget big.bin"
			}
			first := peertest.CKermit(t, b, "set window 31\nset block-check 3\ncd "+local+"\n"+cmd, local)
			deadline := time.Now().Add(time.Minute)
			for {
				if fi, err := os.Stat(watch); err == nil && fi.Size() > 100_000 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the first transfer never got under way")
				}
				time.Sleep(20 * time.Millisecond)
			}
			first.Wait(0) // killed mid-file
			again := "resend big.bin"
			if !tc.up {
				again = "reget big.bin"
			}
			start := time.Now()
			// The first command may meet what the dead client and the
			// server were saying still on the line (C-Kermit's own
			// server fails it too); the second must be heard. The
			// first's failure stays in C-Kermit's exit status (bit 0
			// when it met packets out of its window), so the script
			// ends with "exit 0": from the second on, a failure stops
			// the script with peertest's own status.
			second := peertest.CKermit(t, b, "set window 31\nset block-check 3\ncd "+local+"\nset take error off\nremote pwd\nset take error on\nremote pwd\n"+again+"\nfinish\nexit 0", local)
			if err := second.Wait(90 * time.Second); err != nil {
				t.Fatalf("the restarted client (after %v): %v", time.Since(start), err)
			}
			waitKerf(t, done, "server")
			got, err := os.ReadFile(dst)
			if err != nil || string(got) != string(data) {
				t.Fatalf("%s: %d bytes, %v; want the file whole", dst, len(got), err)
			}
		})
	}
}
