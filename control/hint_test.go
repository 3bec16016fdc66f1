package control_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"kerf/control"
)

// A peer that answers the TLS hello with something else (a plain Kermit
// or any other service) gets the hint to use --classic; a handshake
// given up on by this side (an interrupt) does not.
func TestHandshakeHintOnlyForNonTLSPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serveEach(ln, func(c net.Conn) {
		c.Write([]byte("C-Kermit>\r\n"))
		time.AfterFunc(5*time.Second, func() { c.Close() })
	})
	cfg := control.ClientConfig{Addr: ln.Addr().String(), User: "u", Password: "p", VerifyHost: pin("sha256:none")}
	_, err = control.Dial(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "--classic") {
		t.Fatalf("dial of a non-TLS peer: %v, want the --classic hint", err)
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	ctx, cancel := context.WithCancel(ctxT(t))
	time.AfterFunc(200*time.Millisecond, cancel)
	cfg.Addr = silent.Addr().String()
	_, err = control.Dial(ctx, cfg)
	if err == nil || strings.Contains(err.Error(), "--classic") {
		t.Fatalf("dial given up on by this side: %v, want no hint", err)
	}
}

// A server that accepts and never answers the handshake (stopped with
// SIGSTOP, swamped) is said to be not answering, not only perhaps not a
// kerf server (QA).
func TestSilentServerSaidNotAnswering(t *testing.T) {
	defer control.SetClientHandshakeTimeout(300 * time.Millisecond)()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // the kernel accepts; nobody reads
	cfg := control.ClientConfig{Addr: ln.Addr().String(), User: "u", Password: "p", VerifyHost: pin("sha256:none")}
	_, err = control.Dial(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "not answering") {
		t.Fatalf("dial of a silent server: %v, want it said not answering", err)
	}
}

// A handshake bound given (kerf's --connect-timeout) is the one waited
// for, not the default 15 s (QA ak).
func TestHandshakeTimeoutGiven(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := control.ClientConfig{Addr: ln.Addr().String(), User: "u", Password: "p", VerifyHost: pin("sha256:none"), HandshakeTimeout: 300 * time.Millisecond}
	_, err = control.Dial(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "no answer in 300ms") {
		t.Fatalf("dial of a silent server: %v, want no answer in the 300ms given", err)
	}
}
