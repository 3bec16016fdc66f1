package datachan

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// DialEarly's connections carry data written behind the hello, before
// the server's answer: plaintext, TLS with data records, and TLS with
// the answer read by the Path while blocks go both ways.
func TestDialEarlyCarriesDataBehindTheHello(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	for _, c := range []struct {
		name   string
		server *tls.Config
		client *tls.Config
	}{
		{"plain", nil, nil},
		{"tls", serverTLS, clientTLS},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Listen("127.0.0.1:0", c.server)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := testContext(t)
			tok := NewToken()
			pend := l.Expect(tok, loopback, 2, time.Minute)
			cc, err := DialEarly(ctx, l.Addr().String(), tok, 2, c.client)
			if err != nil {
				t.Fatal(err)
			}
			// The client's Path sends at once, before the server has
			// even taken the connections.
			a := NewPath(cc, WithBlockSize(4096), WithEarlyPairing())
			defer a.Close()
			data := randomData(7, 300_000)
			sent := make(chan error, 1)
			go func() {
				_, err := a.SendFile(ctx, 1, strings.NewReader(string(data)), 0, int64(len(data)))
				if err == nil {
					err = a.Flush()
				}
				sent <- err
			}()
			sc, err := pend.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := sc[0].(*TLSConn); ok != (c.server != nil) || ok && !tc.Records() {
				t.Fatalf("server connection %T, records %v", sc[0], ok && tc.Records())
			}
			b := NewPath(sc, WithBlockSize(4096))
			defer b.Close()
			dst := newMemFile(len(data))
			if err := b.Expect(1, dst, 0, int64(len(data))); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Wait(ctx, 1); err != nil {
				t.Fatalf("server Wait: %v", err)
			}
			if err := <-sent; err != nil {
				t.Fatalf("client SendFile: %v", err)
			}
			if string(dst.bytes()) != string(data) {
				t.Fatal("the server received other bytes")
			}
			// And the other way, once the client's reader has the answer.
			transfer(t, b, a, 2, randomData(8, 70_000))
			a.Release(1)
		})
	}
}

// A refused pairing fails the early Path with the server's reason, as
// Dial would have, even when the client has written blocks behind the
// hello (which may reset the connection).
func TestDialEarlyRefusalSaysWhy(t *testing.T) {
	l := newListener(t)
	ctx := testContext(t)
	l.Expect(NewToken(), loopback, 1, time.Minute)
	cc, err := DialEarly(ctx, l.Addr().String(), NewToken(), 1, nil)
	if err != nil {
		t.Fatalf("DialEarly: %v (the refusal is the Path's to read)", err)
	}
	a := NewPath(cc, WithBlockSize(4096), WithEarlyPairing())
	defer a.Close()
	data := randomData(9, 2<<20)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = a.SendFile(sctx, 1, strings.NewReader(string(data)), 0, int64(len(data)))
	if err == nil {
		err = a.Flush()
	}
	select {
	case <-a.Failed():
	case <-sctx.Done():
		t.Fatal("the Path did not fail")
	}
	err = a.Err()
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "token unknown") {
		t.Fatalf("Path failed with %v; want the refusal and its reason", err)
	}
}

// DialEarly still fails at once where no connection can be made.
func TestDialEarlyUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := DialEarly(testContext(t), addr, NewToken(), 1, nil); err == nil {
		t.Fatal("DialEarly to a closed port succeeded")
	}
}
