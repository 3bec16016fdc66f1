package kermit_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// Giving up after too many tries says what the tries met: a peer that
// never answers (stopped, or on another speed or parity: QA's sender
// killed mid-transfer was reported only as "too many retries"), or a
// line that damages the packets.
func TestTooManyRetriesSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		ber  float64
		want string
	}{
		{"silent peer", 0, "the peer stopped answering"},
		{"damaging line", 0.02, "the line damages too many packets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := link(t, tc.ber, 7)
			cfg := kermit.DefaultConfig()
			cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 100*time.Millisecond, 100*time.Millisecond, 4
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tc.ber == 0 {
				go io.Copy(io.Discard, b) // reads, never answers
			} else {
				// A receiver whose every packet, like the sender's,
				// arrives damaged.
				recv := kermit.NewSession(b, cfg)
				defer recv.Close()
				store, err := filestore.Open(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				go recv.Receive(ctx, store)
			}
			send := kermit.NewSession(a, cfg)
			defer send.Close()
			src := t.TempDir()
			err := send.Send(ctx, writeFiles(t, src, []testFile{{"x", []byte("abc")}}))
			if !errors.Is(err, kermit.ErrTooManyRetries) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("send: %v; want too many retries, %q", err, tc.want)
			}
		})
	}
}
