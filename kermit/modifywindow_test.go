package kermit_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/kermit"
)

// A receiver's already-there check (a resumed file it has whole) takes
// times up to its ModifyWindow apart for one, as the client's quick
// checks do (review 54 L9): a file on FAT, kept to 2 s, is not sent
// again; times further apart, or with no window, are.
func TestReceiverAlreadyThereWithinWindow(t *testing.T) {
	when := time.Date(2026, 12, 7, 10, 0, 1, 0, time.UTC)
	for _, dual := range []bool{true, false} {
		for _, tc := range []struct {
			window, off time.Duration
			there       bool
		}{
			{2 * time.Second, time.Second, true},
			{2 * time.Second, -2 * time.Second, true},
			{2 * time.Second, 3 * time.Second, false},
			{0, time.Second, false},
		} {
			t.Run(fmt.Sprintf("dual=%v window %v, %v apart", dual, tc.window, tc.off), func(t *testing.T) {
				src, dst := t.TempDir(), t.TempDir()
				for _, d := range []string{src, dst} {
					p := filepath.Join(d, "f")
					if err := os.WriteFile(p, []byte("the same bytes"), 0o644); err != nil {
						t.Fatal(err)
					}
					mt := when
					if d == dst {
						mt = when.Add(tc.off)
					}
					os.Chtimes(p, mt, mt)
				}
				var got fileEndings
				scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
				scfg.Resume, scfg.Events = true, got.note
				rcfg.ModifyWindow = tc.window
				serr, rerr := transferEitherInto(t, dual, scfg, rcfg, []kermit.OutgoingFile{outgoing(t, "f", filepath.Join(src, "f"))}, dst)
				if serr != nil || rerr != nil {
					t.Fatalf("send: %v; receive: %v", serr, rerr)
				}
				e := got.of("f")
				if there := e.Kind == kermit.FileSkipped && errors.Is(e.Err, kermit.ErrAlreadyThere); there != tc.there {
					t.Errorf("f ended %v (%v); want already there: %v", e.Kind, e.Err, tc.there)
				}
			})
		}
	}
}
