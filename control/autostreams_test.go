package control_test

import (
	"net"
	"runtime"
	"testing"

	"kerf/control"
)

// addrConn is a connection that only has addresses.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c addrConn) LocalAddr() net.Addr  { return c.local }
func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// A client not told how many data connections to open asks for one to
// its own host (both ends share the cores) and two elsewhere, where a
// second core can take a connection's receiving.
func TestAutoStreams(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 1649} }
	elsewhere := 2
	if runtime.NumCPU() < 2 {
		elsewhere = 1
	}
	for _, tc := range []struct {
		local, remote net.Addr
		want          int
	}{
		{tcp("127.0.0.1"), tcp("127.0.0.1"), 1},
		{tcp("::1"), tcp("::1"), 1},
		{tcp("192.0.2.7"), tcp("192.0.2.7"), 1}, // the host's own address
		{tcp("192.0.2.7"), tcp("192.0.2.8"), elsewhere},
		{tcp("2001:db8::1"), tcp("2001:db8::2"), elsewhere},
	} {
		if got := control.AutoStreams(addrConn{local: tc.local, remote: tc.remote}); got != tc.want {
			t.Errorf("%v -> %v: %d streams, want %d", tc.local, tc.remote, got, tc.want)
		}
	}
}
