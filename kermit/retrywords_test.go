package kermit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
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
		{"silent peer", 0, "no answer from the peer"},
		{"peer silent after its first answer", -1, "the peer stopped answering"},
		{"damaging line", 0.02, "the line damages too many packets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := link(t, max(tc.ber, 0), 7)
			cfg := kermit.DefaultConfig()
			cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 100*time.Millisecond, 100*time.Millisecond, 4
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// receive runs a receiver over rw until the test ends, its
			// store closed only once it has stopped.
			receive := func(rw net.Conn) {
				recv := kermit.NewSession(rw, cfg)
				store, err := filestore.Open(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { defer close(done); recv.Receive(ctx, store) }()
				t.Cleanup(func() { cancel(); recv.Close(); <-done; store.Close() })
			}
			switch {
			case tc.ber == 0:
				go io.Copy(io.Discard, b) // reads, never answers
			case tc.ber < 0:
				// A receiver that answers the Send-Init, then is heard
				// no more (its line cut one way).
				receive(&mutedAfter{Conn: b, writes: 1})
			default:
				// A receiver whose every packet, like the sender's,
				// arrives damaged.
				receive(b)
			}
			send := kermit.NewSession(a, cfg)
			defer send.Close()
			src := t.TempDir()
			err := send.Send(ctx, writeFiles(t, src, []testFile{{"x", []byte("abc")}}))
			if !errors.Is(err, kermit.ErrTooManyRetries) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("send: %v; want too many retries, %q", err, tc.want)
			}
			// Only a peer never heard is no answer (kerf exits 3 for
			// it, as for a server not reached; QA ak).
			if noAnswer := errors.Is(err, kermit.ErrNoAnswer); noAnswer != (tc.ber == 0) {
				t.Errorf("send: %v; ErrNoAnswer %v", err, noAnswer)
			}
		})
	}
}

// mutedAfter is a connection whose writes after the first few are
// dropped: a peer that answered, then went silent.
type mutedAfter struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (m *mutedAfter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writes <= 0 {
		return len(p), nil
	}
	m.writes--
	return m.Conn.Write(p)
}
