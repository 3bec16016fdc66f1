package control_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/control"
	"kerf/kermit"
)

// QUIC is agreed in the extension field: the data channel is QUIC
// streams only when the client asks and the server listens for QUIC;
// otherwise the client's data goes over TCP as before. QUIC is always
// encrypted, so a client asking for plaintext too gets QUIC.
func TestDataOverQUIC(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ask, listen   bool
		plain         bool
		wantQUIC      bool
		wantEncrypted bool
	}{
		{"asked, offered", true, true, false, true, true},
		{"asked with plaintext, offered", true, true, true, true, true},
		{"asked, server without QUIC", true, false, false, false, true},
		{"asked with plaintext, server without QUIC", true, false, true, false, false},
		{"not asked, offered", false, true, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, back := t.TempDir(), t.TempDir()
			logs := &syncBuf{}
			srv := startServerWith(t, root, func(c *control.ServerConfig) {
				c.QUIC = tc.listen
				c.AllowPlainData = true
				c.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			})
			if (srv.QUICAddr() != nil) != tc.listen {
				t.Fatalf("QUIC address %v with QUIC %v", srv.QUICAddr(), tc.listen)
			}
			ctx := ctxT(t)
			cl := dialT(t, ctx, clientConfig(srv, func(c *control.ClientConfig) {
				c.QUIC, c.PlainData, c.Streams = tc.ask, tc.plain, 3
			}))
			big, small := rnd(5<<20+7, 3), rnd(1000, 4)
			if err := cl.Send(ctx, []kermit.OutgoingFile{memFile("big.bin", big), memFile("small.bin", small), memFile("empty", nil)}); err != nil {
				t.Fatal(err)
			}
			if cl.DataOverQUIC() != tc.wantQUIC {
				t.Fatalf("data over QUIC = %v, want %v", cl.DataOverQUIC(), tc.wantQUIC)
			}
			if cl.DataEncrypted() != tc.wantEncrypted {
				t.Fatalf("data encrypted = %v, want %v", cl.DataEncrypted(), tc.wantEncrypted)
			}
			if st := cl.DataStats(); st.BytesSent != int64(len(big)+len(small)) {
				t.Fatalf("data path sent %d bytes, want %d", st.BytesSent, len(big)+len(small))
			}
			checkStored(t, root, map[string][]byte{"big.bin": big, "small.bin": small, "empty": nil})
			getInto(t, ctx, cl, back, "big.bin", big) // back, on the same data channel
			// The server's log says which (QA ao: a QUIC session's end
			// read as TLS on TCP).
			cl.Close()
			for i := 0; !strings.Contains(logs.String(), `msg="session end"`); i++ {
				if i == 2000 {
					t.Fatalf("no session end logged 20 s after the client closed:\n%s", logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if want := fmt.Sprintf("data_quic=%v", tc.wantQUIC); !strings.Contains(logs.String(), want) {
				t.Errorf("the session's end says no %s:\n%s", want, logs.String())
			}
		})
	}
}

// A QUIC connection that cannot be made (here: no answer on the UDP
// port, as where UDP is blocked) leaves the data on TLS over TCP, after
// a warning that names the QUIC failure: the transfer is made, and the
// user told why it is not over QUIC.
func TestQUICFailureFallsBackToTCP(t *testing.T) {
	root := t.TempDir()
	srv := startServerWith(t, root, func(c *control.ServerConfig) { c.QUIC = true })
	control.CloseQUIC(srv)
	ctx := ctxT(t)
	var logged bytes.Buffer
	var mu sync.Mutex
	cl := dialT(t, ctx, clientConfig(srv, func(c *control.ClientConfig) {
		c.QUIC, c.Streams = true, 2
		c.Log = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	data := rnd(3<<20+1, 5)
	if err := cl.Send(ctx, []kermit.OutgoingFile{memFile("a.bin", data)}); err != nil {
		t.Fatalf("send with QUIC unanswered: %v", err)
	}
	if cl.DataOverQUIC() || !cl.DataEncrypted() {
		t.Fatalf("data over QUIC %v, encrypted %v; want TLS over TCP", cl.DataOverQUIC(), cl.DataEncrypted())
	}
	checkStored(t, root, map[string][]byte{"a.bin": data})
	if err := cl.QUICFallback(); err == nil || !strings.Contains(err.Error(), "QUIC connection to") {
		t.Fatalf("QUICFallback() = %v; want the QUIC connection's failure", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if w := logged.String(); !strings.Contains(w, "instead of QUIC") || !strings.Contains(w, "QUIC connection to") {
		t.Fatalf("log %q; want the fallback and its cause", w)
	}
}

// A server that refuses the QUIC connection (at its limits, or not
// expecting this address) leaves the client's data on TLS over TCP, at
// once: no stream of the refused connection was read, so none is paired
// for the token.
func TestQUICRefusedFallsBackToTCP(t *testing.T) {
	root := t.TempDir()
	srv := startServerWith(t, root, func(c *control.ServerConfig) { c.QUIC = true })
	control.RefuseQUIC(srv)
	ctx := ctxT(t)
	cl := dialT(t, ctx, clientConfig(srv, func(c *control.ClientConfig) { c.QUIC, c.Streams = true, 2 }))
	data := rnd(1<<20+3, 6)
	if err := cl.Send(ctx, []kermit.OutgoingFile{memFile("r.bin", data)}); err != nil {
		t.Fatalf("send with QUIC refused: %v", err)
	}
	if cl.DataOverQUIC() || !cl.DataEncrypted() {
		t.Fatalf("data over QUIC %v, encrypted %v; want TLS over TCP", cl.DataOverQUIC(), cl.DataEncrypted())
	}
	if err := cl.QUICFallback(); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("QUICFallback() = %v; want the refusal", err)
	}
	checkStored(t, root, map[string][]byte{"r.bin": data})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
