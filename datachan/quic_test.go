package datachan

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// quicPair returns a Listener serving QUIC streams (joined with a TCP
// listener, as a server runs them) and TLS configurations for both ends.
func quicPair(t *testing.T) (l *Listener, q *QUICListener, client *tls.Config) {
	t.Helper()
	serverTLS, clientTLS := testTLS(t)
	q, err := ListenQUIC("127.0.0.1:0", serverTLS, 2*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l = NewListener(JoinListeners(tcp, q), nil)
	q.SetAdmit(l.Awaits, 0) // as a server does
	t.Cleanup(func() { l.Close() })
	return l, q, clientTLS
}

// quicStreams pairs streams QUIC streams through l and returns the
// client's and the server's ends.
func quicStreams(t *testing.T, l *Listener, q *QUICListener, conf *tls.Config, streams int) (client, server []net.Conn) {
	t.Helper()
	ctx := testContext(t)
	tok := NewToken()
	pend := l.Expect(tok, loopback, streams, time.Minute)
	client, err := DialQUIC(ctx, q.Addr().String(), tok, streams, conf)
	if err != nil {
		t.Fatal(err)
	}
	if server, err = pend.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return client, server
}

func TestQUICPairAndTransfer(t *testing.T) {
	l, q, conf := quicPair(t)
	cc, sc := quicStreams(t, l, q, conf, 3)
	for i := range cc {
		if _, ok := cc[i].(*QUICStream); !ok {
			t.Fatalf("client conn %d is %T", i, cc[i])
		}
		if _, ok := sc[i].(*QUICStream); !ok {
			t.Fatalf("server conn %d is %T", i, sc[i])
		}
	}
	a, b := NewPath(cc, WithBlockSize(4096)), NewPath(sc, WithBlockSize(4096))
	transfer(t, a, b, 1, randomData(1, 1_000_000))
	transfer(t, b, a, 2, randomData(2, 50_000))
	// Closing one end's Path ends the QUIC connection: the other's
	// streams read the orderly end, as after a TCP close.
	a.Close()
	select {
	case <-b.Failed():
		if err := b.Err(); !errors.Is(err, ErrConnLost) {
			t.Fatalf("receiver's error after the sender closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the peer's Path did not notice the QUIC connection ending")
	}
	b.Close()
}

func TestQUICPairingRefused(t *testing.T) {
	l, q, conf := quicPair(t)
	ctx := testContext(t)
	l.Expect(NewToken(), loopback, 1, time.Minute)
	_, err := DialQUIC(ctx, q.Addr().String(), NewToken(), 1, conf)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), statusText(statusRefused)) {
		t.Fatalf("wrong token over QUIC: %v, want ErrRefused with the server's reason", err)
	}
	// From another address than the control connection's.
	tok := NewToken()
	l.Expect(tok, net.IPv4(192, 0, 2, 1), 1, time.Minute)
	if _, err := DialQUIC(ctx, q.Addr().String(), tok, 1, conf); !errors.Is(err, ErrRefused) {
		t.Fatalf("QUIC stream from the wrong address: %v, want ErrRefused", err)
	}
	// A client that does not trust the server's certificate.
	tok = NewToken()
	l.Expect(tok, loopback, 1, time.Minute)
	if _, err := DialQUIC(ctx, q.Addr().String(), tok, 1, &tls.Config{}); err == nil {
		t.Fatal("untrusted certificate accepted over QUIC")
	}
	if l.Refused() < 2 {
		t.Fatalf("refused %d streams, want at least 2", l.Refused())
	}
}

// A QUIC connection from an address no token awaits is closed at once,
// before it holds one of the listener's slots (a flood of connections
// that open no stream used to fill them all).
func TestQUICStrangerClosedAtOnce(t *testing.T) {
	l, q, conf := quicPair(t)
	ctx := testContext(t)
	l.Expect(NewToken(), net.IPv4(192, 0, 2, 1), 1, time.Minute)
	_, err := DialQUIC(ctx, q.Addr().String(), NewToken(), 1, conf)
	if err == nil || !strings.Contains(err.Error(), "no data connection expected") {
		t.Fatalf("QUIC from an address no token awaits: %v", err)
	}
	// One token awaited from here: admitted again.
	cc, sc := quicStreams(t, l, q, conf, 1)
	closeAll(cc)
	closeAll(sc)
}

// A damaged block still comes again over QUIC: the CRC-32C check is the
// data path's, whatever the transport.
func TestQUICDamagedBlockResent(t *testing.T) {
	l, q, conf := quicPair(t)
	cc, sc := quicStreams(t, l, q, conf, 2)
	d := new(damage)
	for i := range sc {
		sc[i] = &damageConn{Conn: sc[i], block: 3, damage: d}
	}
	a, b := NewPath(cc, WithBlockSize(8192)), NewPath(sc, WithBlockSize(8192))
	defer a.Close()
	defer b.Close()
	transfer(t, a, b, 1, randomData(3, 300_000))
	if !d.didDamage() {
		t.Fatal("nothing was damaged")
	}
	if st := a.Stats(); st.BlocksResent == 0 {
		t.Fatalf("no block was re-sent: %+v", st)
	}
}

// A QUIC connection that opens no stream is closed after the handshake
// time, and so is one whose only stream failed its hello.
func TestQUICIdleConnectionClosed(t *testing.T) {
	before := runtime.NumGoroutine()
	l, q, conf := quicPair(t)
	ctx := testContext(t)
	l.Expect(NewToken(), loopback, 1, time.Minute) // admitted: a token awaits this address
	c, err := quic.DialAddr(ctx, q.Addr().String(), quicTLS(conf), quicConfig(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case <-c.Context().Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a QUIC connection without streams stays open")
	}
	if held := time.Since(start); held < 2*time.Second {
		t.Fatalf("closed after %v, before the 2 s handshake time", held)
	}
	l.Close() // and with it q
	checkGoroutines(t, before)
}

// Every QUIC connection's UDP socket is closed with it, and the
// listener's with the listener: its port can be bound again at once.
func TestQUICSocketsClosed(t *testing.T) {
	l, q, conf := quicPair(t)
	addr := q.Addr().String()
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(es)
	}
	before := fds()
	for range 10 {
		cc, sc := quicStreams(t, l, q, conf, 2)
		a, b := NewPath(cc), NewPath(sc)
		transfer(t, a, b, 1, randomData(4, 10_000))
		a.Close()
		b.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for fds() > before+1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // connections linger a moment
	}
	if n := fds(); n > before+1 {
		t.Errorf("%d descriptors open after 10 QUIC sessions, %d before", n, before)
	}
	l.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("the listener's UDP port after Close: %v", err)
	}
	pc.Close()
}

// Closing the listener while a QUIC connection is being admitted (a
// handshake completing as the server stops) does not deadlock: Close
// held its lock while waiting for the QUIC accept loop, which was
// asking Awaits for the same lock.
func TestCloseWhileAdmittingQUIC(t *testing.T) {
	l, q, conf := quicPair(t)
	entered, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	q.SetAdmit(func(ip net.IP) bool {
		once.Do(func() { close(entered) })
		<-proceed
		return l.Awaits(ip)
	}, 0)
	go DialQUIC(testContext(t), q.Addr().String(), NewToken(), 1, conf)
	<-entered
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	time.Sleep(200 * time.Millisecond) // Close under way
	close(proceed)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Listener.Close deadlocked with a QUIC connection being admitted")
	}
}
