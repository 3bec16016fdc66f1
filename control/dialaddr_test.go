package control_test

import (
	"net"
	"testing"

	"kerf/control"
)

// DialAddr connects to the address given, while the server's key is
// checked under Addr's name (a further session of a login reaches the
// machine the first did, behind a name with several addresses).
func TestDialAddrConnectsThereChecksAddr(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), nil)
	nowhere, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere.Close() // nothing listens at Addr
	var checked string
	cfg := clientConfig(srv, func(c *control.ClientConfig) {
		c.Addr, c.DialAddr = nowhere.Addr().String(), srv.Addr().String()
		verify := c.VerifyHost
		c.VerifyHost = func(addr, fp string) error { checked = addr; return verify(addr, fp) }
	})
	cl := dialT(t, ctxT(t), cfg)
	if got := cl.RemoteAddr().String(); got != srv.Addr().String() {
		t.Errorf("reached %s, want %s", got, srv.Addr())
	}
	if checked != nowhere.Addr().String() {
		t.Errorf("key checked under %q, want Addr %q", checked, nowhere.Addr())
	}
}
