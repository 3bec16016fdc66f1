package datachan

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

var loopback = net.IPv4(127, 0, 0, 1)

func newListener(t *testing.T, opts ...ListenerOption) *Listener {
	t.Helper()
	l, err := Listen("127.0.0.1:0", nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// dialFrom runs the client hello from a chosen local address.
func dialFrom(ctx context.Context, local net.IP, addr string, tok Token, stream int) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: local}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return clientHello(ctx, c, tok, stream, nil, false)
}

// wantClosed checks that the peer closes c without sending anything.
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || !(err == io.EOF || errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("%s: read %d bytes, %v; want the connection closed", what, n, err)
	}
}

func closeAll(cs []net.Conn) {
	for _, c := range cs {
		c.Close()
	}
}

func TestPairingRightToken(t *testing.T) {
	l := newListener(t)
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 3, time.Minute)
	cc, err := Dial(ctx, l.Addr().String(), tok, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(cc)
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(sc)
	if len(cc) != 3 || len(sc) != 3 {
		t.Fatalf("%d client, %d server conns", len(cc), len(sc))
	}
	// Stream i on the client is stream i on the server.
	for i := range 3 {
		if cc[i].LocalAddr().String() != sc[i].RemoteAddr().String() {
			t.Errorf("stream %d: client %v, server sees %v", i, cc[i].LocalAddr(), sc[i].RemoteAddr())
		}
	}
}

func TestPairingWrongToken(t *testing.T) {
	l := newListener(t)
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 1, time.Minute)
	if _, err := Dial(ctx, l.Addr().String(), NewToken(), 1, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("wrong token: %v", err)
	}
	// The right token still works afterwards.
	cc, err := Dial(ctx, l.Addr().String(), tok, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeAll(cc)
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closeAll(sc)
}

func TestPairingReplayedToken(t *testing.T) {
	l := newListener(t)
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 2, time.Minute)
	c0, err := dialFrom(ctx, loopback, l.Addr().String(), tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	// The same stream index again, while the token is still pending.
	if _, err := dialFrom(ctx, loopback, l.Addr().String(), tok, 0); !errors.Is(err, ErrRefused) {
		t.Fatalf("stream 0 twice: %v", err)
	}
	// An index beyond streams.
	if _, err := dialFrom(ctx, loopback, l.Addr().String(), tok, 2); !errors.Is(err, ErrRefused) {
		t.Fatalf("stream 2 of 2: %v", err)
	}
	c1, err := dialFrom(ctx, loopback, l.Addr().String(), tok, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(sc)
	// Used up: any further use is refused.
	for stream := range 2 {
		if _, err := dialFrom(ctx, loopback, l.Addr().String(), tok, stream); !errors.Is(err, ErrRefused) {
			t.Fatalf("replay of stream %d: %v", stream, err)
		}
	}
	if _, err := Dial(ctx, l.Addr().String(), tok, 2, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("replay: %v", err)
	}
}

func TestPairingExpiredToken(t *testing.T) {
	l := newListener(t)
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 1, 50*time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	if _, err := Dial(ctx, l.Addr().String(), tok, 1, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("expired token: %v", err)
	}
	if _, err := pend.Wait(ctx); !errors.Is(err, ErrPairingExpired) {
		t.Fatalf("Wait: %v", err)
	}
}

func TestPairingExpiryClosesPartialStreams(t *testing.T) {
	l := newListener(t)
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 2, 200*time.Millisecond)
	c0, err := dialFrom(ctx, loopback, l.Addr().String(), tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	if _, err := pend.Wait(ctx); !errors.Is(err, ErrPairingExpired) {
		t.Fatalf("Wait: %v", err)
	}
	wantClosed(t, c0, "stream 0 after expiry")
}

func TestPairingWrongSourceIP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs all of 127/8 on the loopback interface")
	}
	l := newListener(t)
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 1, time.Minute)
	other := net.IPv4(127, 0, 0, 2)
	if _, err := dialFrom(ctx, other, l.Addr().String(), tok, 0); !errors.Is(err, ErrRefused) {
		t.Fatalf("from 127.0.0.2: %v", err)
	}
	// The refusal does not burn the token.
	c, err := dialFrom(ctx, loopback, l.Addr().String(), tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closeAll(sc)

	// from == nil accepts any address.
	tok2 := NewToken()
	pend2 := l.Expect(tok2, nil, 1, time.Minute)
	c2, err := dialFrom(ctx, other, l.Addr().String(), tok2, 0)
	if err != nil {
		t.Fatalf("from 127.0.0.2 with from == nil: %v", err)
	}
	defer c2.Close()
	sc2, err := pend2.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closeAll(sc2)
}

func TestPairingSilentConnectionTimesOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	l := newListener(t, WithHandshakeTimeout(timeout))
	ctx := testContext(t)

	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start := time.Now()

	// A legitimate pairing on the same listener meanwhile.
	tok := NewToken()
	pend := l.Expect(tok, loopback, 2, time.Minute)
	cc, err := Dial(ctx, l.Addr().String(), tok, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(cc)
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(sc)
	if time.Since(start) > timeout {
		t.Logf("pairing took %v", time.Since(start))
	}

	wantClosed(t, silent, "silent connection")
	if d := time.Since(start); d < timeout-50*time.Millisecond {
		t.Fatalf("closed after %v, before the %v timeout", d, timeout)
	}
	if l.Refused() != 1 {
		t.Fatalf("Refused = %d, want 1", l.Refused())
	}
	// The paired connections still work.
	transferOver(t, cc, sc)
}

func TestPairingGarbageHello(t *testing.T) {
	l := newListener(t)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n......"))
	wantClosed(t, c, "garbage hello")
}

func TestPairingBadVersion(t *testing.T) {
	l := newListener(t)
	tok := NewToken()
	l.Expect(tok, nil, 1, time.Minute)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b [helloLen]byte
	putHello(&b, tok, 0)
	b[8] = 9
	c.Write(b[:])
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "\x02" {
		t.Fatalf("bad version: answer %q, %v; want status 2 then close", got, err)
	}
}

func TestPairingWaitContextCancel(t *testing.T) {
	l := newListener(t)
	tok := NewToken()
	pend := l.Expect(tok, nil, 1, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := pend.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}
	// The token was withdrawn with the abandoned Wait.
	if _, err := Dial(testContext(t), l.Addr().String(), tok, 1, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("token after cancelled Wait: %v", err)
	}
}

func TestExpectTokenInUse(t *testing.T) {
	l := newListener(t)
	tok := NewToken()
	l.Expect(tok, nil, 1, time.Minute)
	if _, err := l.Expect(tok, nil, 1, time.Minute).Wait(testContext(t)); !errors.Is(err, ErrTokenInUse) {
		t.Fatalf("second Expect: %v", err)
	}
}

func TestListenerCloseFailsPending(t *testing.T) {
	before := runtime.NumGoroutine()
	l, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	pend := l.Expect(NewToken(), nil, 1, time.Minute)
	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(20 * time.Millisecond) // let the handshake goroutine start
	l.Close()
	if _, err := pend.Wait(testContext(t)); !errors.Is(err, ErrListenerClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	checkGoroutines(t, before)
}

func TestPairingTLS(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	l, err := Listen("127.0.0.1:0", serverTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 2, time.Minute)
	cc, err := Dial(ctx, l.Addr().String(), tok, 2, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cc[0].(*TLSConn); !ok {
		t.Fatalf("client conn is %T", cc[0])
	}
	if _, ok := sc[0].(*TLSConn); !ok {
		t.Fatalf("server conn is %T", sc[0])
	}
	transferOver(t, cc, sc)

	// A client that does not trust the certificate does not pair.
	tok2 := NewToken()
	l.Expect(tok2, loopback, 1, time.Minute)
	if _, err := Dial(ctx, l.Addr().String(), tok2, 1, &tls.Config{}); err == nil {
		t.Fatal("untrusted certificate accepted")
	}
}

// transferOver runs a Path each way over paired connections.
func transferOver(t *testing.T, cc, sc []net.Conn) {
	t.Helper()
	a, b := NewPath(cc, WithBlockSize(4096)), NewPath(sc, WithBlockSize(4096))
	defer a.Close()
	defer b.Close()
	transfer(t, a, b, 1, randomData(1, 100_000))
	transfer(t, b, a, 2, randomData(2, 50_000))
}

// testTLS returns a server config with a fresh self-signed certificate
// and a client config that trusts it.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	cert := selfSignedCert(t)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return &tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: pool}
}

func selfSignedCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kerf test"},
		IPAddresses:  []net.IP{loopback},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestListenerCloseRightAfterPairing pins a race: Listener.Close closed
// connections still marked as in their hello, and a paired connection
// stayed marked for a moment after Pending.Wait had returned it.
func TestListenerCloseRightAfterPairing(t *testing.T) {
	testHookPaired = func() { time.Sleep(20 * time.Millisecond) }
	defer func() { testHookPaired = func() {} }()
	for range 5 {
		cc, sc := pairedConns(t, 2) // closes the listener on return
		for i := range cc {
			if _, err := cc[i].Write([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			var b [1]byte
			sc[i].SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(sc[i], b[:]); err != nil || b[0] != byte(i) {
				t.Fatalf("stream %d after Listener.Close: %v", i, err)
			}
		}
		closeAll(cc)
		closeAll(sc)
	}
}

// Connections no token awaits (a flood of silent ones from another
// address) share a few slots of their own and are closed at accept
// beyond them: a session's own connections still pair. (All the
// handshake slots used to be first come, first served.)
func TestStrangersCannotStarvePairing(t *testing.T) {
	l := newListener(t, WithMaxHandshakes(64), WithHandshakeTimeout(time.Minute))
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, 2, time.Minute)
	stranger := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	const flood = 200
	for range flood {
		c, err := stranger.DialContext(ctx, "tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); l.Refused() < flood-maxStrangers; {
		if time.Now().After(deadline) {
			t.Fatalf("refused %d of %d silent strangers at accept, want all but %d", l.Refused(), flood, maxStrangers)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cc, err := Dial(ctx, l.Addr().String(), tok, 2, nil)
	if err != nil {
		t.Fatalf("pairing during the flood: %v", err)
	}
	defer closeAll(cc)
	sc, err := pend.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(sc)
	transferOver(t, cc, sc)
	if _, err := dialFrom(ctx, loopback, l.Addr().String(), NewToken(), 0); err == nil {
		t.Fatal("an unknown token paired")
	}
}
