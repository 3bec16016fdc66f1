package control_test

import (
	"strings"
	"testing"

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
			srv := startServerWith(t, root, func(c *control.ServerConfig) {
				c.QUIC = tc.listen
				c.AllowPlainData = true
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
		})
	}
}

// A QUIC connection that cannot be made fails the client with its own
// cause (here: no answer on the UDP port), not with the server's pairing
// timeout after the client went on with no data connections.
func TestQUICDialFailureIsTheClients(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), func(c *control.ServerConfig) { c.QUIC = true })
	control.CloseQUIC(srv)
	ctx := ctxT(t)
	cl := dialT(t, ctx, clientConfig(srv, func(c *control.ClientConfig) { c.QUIC = true }))
	err := cl.Send(ctx, []kermit.OutgoingFile{memFile("a.bin", rnd(1000, 5))})
	if err == nil || !strings.Contains(err.Error(), "QUIC connection to") {
		t.Fatalf("send over an unanswered QUIC port: %v, want the client's QUIC error", err)
	}
}
