package kermit_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"kerf/kermit"
)

// A file written to while it is sent (here: grown, the moment it is
// opened) arrives as a mix of old and new bytes whose checks all pass:
// the sender tells the receiver to discard it and reports it failed,
// naming the change, and the group's other files arrive. Both the
// classic and the dual-channel paths.
func TestFileChangedWhileSentIsNotStored(t *testing.T) {
	for _, dual := range []bool{false, true} {
		name := "classic"
		if dual {
			name = "dual"
		}
		t.Run(name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"grows.log", randomBytes(300_000, 7)}, {"steady.bin", randomBytes(5000, 8)}})
			p := filepath.Join(src, "grows.log")
			open := out[0].Open
			out[0].Open = func() (kermit.FileReader, error) {
				r, err := open()
				if err == nil {
					f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Error(err)
						return r, nil
					}
					if _, err := f.Write([]byte("a line written while the file was sent\n")); err != nil {
						t.Error(err)
					}
					f.Close()
				}
				return r, err
			}
			var serr, rerr error
			if dual {
				_, serr, rerr = dualTransfer(t, kermit.DefaultConfig(), kermit.DefaultConfig(), out, dst)
			} else {
				a, b := link(t, 0, 1)
				serr, rerr, _ = transfer(t, a, b, kermit.DefaultConfig(), kermit.DefaultConfig(), out, dst)
			}
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "grows.log" {
				t.Fatalf("send: %v; want a group error naming grows.log", serr)
			}
			if rerr != nil {
				t.Fatalf("receive: %v", rerr)
			}
			if _, err := os.Stat(filepath.Join(dst, "grows.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("grows.log stored (%v); want it discarded", err)
			}
			checkFiles(t, dst, []testFile{{"steady.bin", randomBytes(5000, 8)}})
		})
	}
}
