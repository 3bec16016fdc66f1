package datachan

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the writes made on a connection and the bytes
// they wrote.
type countingConn struct {
	net.Conn
	writes, bytes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	n, err := c.Conn.Write(p)
	c.bytes.Add(int64(n))
	return n, err
}

// tlsPair returns a TLSConn client and server joined over loopback TCP,
// with the client's underlying writes counted, after the handshake.
func tlsPair(t *testing.T) (*TLSConn, *TLSConn, *countingConn) {
	t.Helper()
	return tlsPairWith(t, TLSServer)
}

// With a peer that keeps TLS records, after Paired the records of one
// Write leave in a few large writes instead of one write per 16 KiB
// record, and arrive intact.
func TestTLSConnBatchesRecords(t *testing.T) {
	data := randomData(14, 1<<20)
	for _, batched := range []bool{false, true} {
		client, server, counted := tlsPairWith(t, legacyTLSServer)
		if batched {
			client.Paired()
		}
		got := make(chan []byte, 1)
		readErr := make(chan error, 1)
		go func() {
			b, err := io.ReadAll(server)
			got <- b
			readErr <- err
		}()
		before := counted.writes.Load()
		if _, err := client.Write(data); err != nil {
			t.Fatal(err)
		}
		writes := counted.writes.Load() - before
		if err := client.Close(); err != nil {
			t.Fatal(err)
		}
		if b := <-got; !bytes.Equal(b, data) {
			t.Fatalf("batched=%v: %d bytes arrived, want the %d sent", batched, len(b), len(data))
		}
		if err := <-readErr; err != nil {
			t.Fatalf("batched=%v: reading to the end: %v", batched, err)
		}
		switch {
		case batched && writes > int64(len(data)/tlsBatchBytes+1):
			t.Fatalf("batched: %d writes for 1 MiB", writes)
		case !batched && writes < 64:
			t.Fatalf("unbatched: only %d writes for 1 MiB; the test no longer sees records", writes)
		}
	}
}

// What the batcher holds when the connection closes (a close_notify
// alert, say) is sent before the close.
func TestRecordBatcherFlushesOnClose(t *testing.T) {
	a, b := net.Pipe()
	rb := &recordBatcher{Conn: a}
	rb.batch()
	if _, err := rb.Write([]byte("alert")); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		p, _ := io.ReadAll(b)
		got <- p
	}()
	if err := rb.Close(); err != nil {
		t.Fatal(err)
	}
	if p := <-got; string(p) != "alert" {
		t.Fatalf("peer read %q before the close, want %q", p, "alert")
	}
}

// Close does not wait behind a block stuck on a peer that stopped
// reading, with TLS records or data records.
func TestTLSConnCloseBreaksStuckWrite(t *testing.T) {
	t.Run("tls", func(t *testing.T) { testCloseBreaksStuckWrite(t, legacyTLSServer) })
	t.Run("records", func(t *testing.T) { testCloseBreaksStuckWrite(t, TLSServer) })
}

func testCloseBreaksStuckWrite(t *testing.T, server func(net.Conn, *tls.Config) *TLSConn) {
	client, _, _ := tlsPairWith(t, server)
	client.Paired()
	wrote := make(chan error, 1)
	go func() {
		// Blocks of 100 KiB until the socket buffers are full: the
		// writer gets stuck in the batcher's flush, after crypto/tls's
		// own write has returned.
		for {
			if _, err := client.Write(make([]byte, 100<<10)); err != nil {
				wrote <- err
				return
			}
		}
	}()
	// Let the write fill the socket buffers and block.
	time.Sleep(200 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- client.Close() }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second): // crypto/tls would wait 5 s
		t.Fatal("Close waited behind the stuck write")
	}
	if err := <-wrote; err == nil {
		t.Fatal("the stuck write succeeded")
	}
}

// A batched connection still sends its close_notify alert when it
// closes (crypto/tls gives it a deadline that a held-back alert would
// miss).
func TestTLSConnCloseSendsCloseNotify(t *testing.T) {
	client, server, counted := tlsPairWith(t, legacyTLSServer)
	client.Paired()
	if _, err := client.Write([]byte("block")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(server, buf); err != nil {
		t.Fatal(err)
	}
	before := counted.bytes.Load()
	if err := client.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// A TLS 1.3 alert record: 5 header bytes, 2 alert bytes, the inner
	// content type and a 16-byte tag.
	if sent := counted.bytes.Load() - before; sent != 24 {
		t.Fatalf("Close wrote %d bytes, want the 24 of a close_notify record", sent)
	}
}
