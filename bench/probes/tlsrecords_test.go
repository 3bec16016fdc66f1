package probes

// crypto/tls against AES-128-GCM records sealed into the write buffer and
// opened into the reader's, 1 GiB over loopback TCP in one process: the
// estimate that led to data records (docs/benchmarks.md, "TLS data
// records").

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"testing"
	"time"
)

const total = 1 << 30
const blk = 1 << 20

func pair(t testing.TB) (net.Conn, net.Conn) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	ch := make(chan net.Conn)
	go func() { c, _ := ln.Accept(); ch <- c }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return c, <-ch
}

func cert() tls.Certificate {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"x"}}
	der, _ := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}

// stream writes total bytes into w in blk-byte writes while a goroutine
// reads them from r.
func stream(b *testing.B, w io.Writer, r io.Reader) {
	done := make(chan struct{})
	go func() {
		buf := make([]byte, blk)
		for n := 0; n < total; {
			m, err := io.ReadFull(r, buf)
			if err != nil {
				panic(err)
			}
			n += m
		}
		close(done)
	}()
	buf := make([]byte, blk)
	b.SetBytes(total)
	b.ResetTimer()
	for n := 0; n < total; n += blk {
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}

func BenchmarkCryptoTLS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		a, c := pair(b)
		srv := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert()}})
		cli := tls.Client(a, &tls.Config{InsecureSkipVerify: true})
		stream(b, cli, srv)
		a.Close()
		c.Close()
	}
}

func bench(b *testing.B, rec int) {
	key := make([]byte, 16)
	blkc, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCM(blkc)
	for i := 0; i < b.N; i++ {
		a, c := pair(b)
		done := make(chan struct{})
		go func() {
			buf := make([]byte, rec+16+4)
			n := 0
			var nonce [12]byte
			var seq uint64
			for n < total {
				if _, err := io.ReadFull(c, buf[:4]); err != nil {
					panic(err)
				}
				l := int(binary.BigEndian.Uint32(buf[:4]))
				if _, err := io.ReadFull(c, buf[4:4+l]); err != nil {
					panic(err)
				}
				binary.BigEndian.PutUint64(nonce[4:], seq)
				seq++
				p, err := g.Open(buf[4:4], nonce[:], buf[4:4+l], buf[:4])
				if err != nil {
					panic(err)
				}
				n += len(p)
			}
			close(done)
		}()
		buf := make([]byte, rec+16+4)
		var nonce [12]byte
		var seq uint64
		b.SetBytes(total)
		b.ResetTimer()
		for n := 0; n < total; n += rec {
			binary.BigEndian.PutUint32(buf[:4], uint32(rec+16))
			binary.BigEndian.PutUint64(nonce[4:], seq)
			seq++
			g.Seal(buf[4:4], nonce[:], buf[4:4+rec], buf[:4])
			if _, err := a.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		<-done
		a.Close()
		c.Close()
	}
}

func BenchmarkOwn16K(b *testing.B)  { bench(b, 16<<10) }
func BenchmarkOwn256K(b *testing.B) { bench(b, 256<<10) }
func BenchmarkOwn1M(b *testing.B)   { bench(b, 1<<20) }

func BenchmarkPlain(b *testing.B) {
	for i := 0; i < b.N; i++ {
		a, c := pair(b)
		stream(b, a, c)
		a.Close()
		c.Close()
	}
}
