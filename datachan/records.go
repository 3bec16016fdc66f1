package datachan

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Data records: the record layer a TLS data connection switches to once
// it is paired, when both ends offered it in the TLS handshake (ALPN
// alpnRecords). The TLS 1.3 handshake still authenticates the server
// and sets up the keys; only the records after the hello change. They
// are AES-128-GCM, as in TLS, but up to 256 KiB instead of 16 KiB, and
// the receiver decrypts straight into its block buffer and the sender
// seals straight into its write buffer: crypto/tls copies each record
// once more on both sides (docs/protocol-datachan.md §5 has the format
// and the reasons).
//
//	record  = header ciphertext tag
//	header  = 4 bytes, big-endian: bit 31 end, bits 0-30 the length of
//	          ciphertext and tag (16 .. recMaxPlain+16)
//	AAD     = the header
//	nonce   = iv XOR (32 zero bits || 64-bit record number), numbers
//	          counted per direction from 0
//	key, iv = HKDF-Expand-SHA256(secret, label || epoch, 16 or 12), the
//	          epoch being the record number >> recEpochShift
//	secret  = TLS exporter (RFC 8446 §7.5) of the data connection, one
//	          label per direction, 32 bytes
//
// The last record of a direction has the end bit and no data; a stream
// that stops without it was cut, and reading it fails.
const (
	alpnRecords  = "kerf-data-records/1"
	recHeaderLen = 4
	recTagLen    = 16
	recMaxPlain  = 256 << 10
	recEndBit    = 1 << 31
	// Write seals writes of at most recSmall bytes as one record, and
	// cuts longer ones into records of this size, which a stream's read
	// buffer (stream.readFull) takes whole.
	recSmall = smallFrameBuf
	// recWriteBuf holds a full record and smaller ones behind it;
	// recReadBuf a full record and the next one's header, as far as
	// recordReader.fill reads.
	recWriteBuf = recHeaderLen + recMaxPlain + recTagLen + recSmall
	recReadBuf  = recHeaderLen + recMaxPlain + recTagLen + recHeaderLen

	// RFC 5705 §4: labels of private use begin with "EXPERIMENTAL".
	exporterClientToServer = "EXPERIMENTAL-kerf-data-records client"
	exporterServerToClient = "EXPERIMENTAL-kerf-data-records server"
)

// recEpochShift sets how many records one key seals: 2^18 records of at
// most 256 KiB are 2^32 AES blocks, well inside AES-GCM's limits (RFC
// 8446 §5.5 allows about 2^34.5 blocks per key). Tests lower it.
var recEpochShift uint = 18

var (
	errRecordTruncated = errors.New("datachan: data connection ended without its end record (cut short)")
	errRecordAuth      = errors.New("datachan: data record failed authentication")
)

// recordKeys derives the AEAD of each epoch of one direction.
type recordKeys struct {
	secret []byte
	epoch  uint64
	aead   cipher.AEAD
	iv     [12]byte
	nonce  [12]byte // of the record being sealed or opened
}

// forRecord returns the AEAD for record seq and puts its nonce in
// k.nonce (a field, so that passing it to the AEAD allocates nothing).
func (k *recordKeys) forRecord(seq uint64) (cipher.AEAD, error) {
	if e := seq >> recEpochShift; k.aead == nil || e != k.epoch {
		aead, iv, err := deriveRecordKey(k.secret, e)
		if err != nil {
			return nil, err
		}
		k.aead, k.iv, k.epoch = aead, iv, e
	}
	k.nonce = k.iv
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], seq)
	for i := range s {
		k.nonce[4+i] ^= s[i]
	}
	return k.aead, nil
}

func deriveRecordKey(secret []byte, epoch uint64) (cipher.AEAD, [12]byte, error) {
	var e [8]byte
	binary.BigEndian.PutUint64(e[:], epoch)
	key, err := hkdf.Expand(sha256.New, secret, "kerf data key "+string(e[:]), 16)
	if err != nil {
		return nil, [12]byte{}, err
	}
	ivb, err := hkdf.Expand(sha256.New, secret, "kerf data iv "+string(e[:]), 12)
	if err != nil {
		return nil, [12]byte{}, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, [12]byte{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, [12]byte{}, err
	}
	var iv [12]byte
	copy(iv[:], ivb)
	return aead, iv, nil
}

// recordWriter seals writes into records; mu serialises them with the
// end record.
type recordWriter struct {
	mu   sync.Mutex
	w    io.Writer
	keys recordKeys
	seq  uint64
	buf  []byte
	err  error // sticky: the stream is broken after a failed write
	done bool  // the end record went out
}

// Write seals p as one record if it is short, else as records of
// recSmall bytes.
func (rw *recordWriter) Write(p []byte) (int, error) { return rw.write(p, 0, recSmall) }

// writeBlock seals a data block: its header alone, then the payload in
// records of up to recMaxPlain bytes, so that the receiver reads the
// header into its small buffer and the payload, record by record,
// straight into the block's buffer. Short blocks go as one record.
func (rw *recordWriter) writeBlock(p []byte, header int) (int, error) {
	return rw.write(p, header, recMaxPlain)
}

// write seals p[:first] as a record of its own (if first > 0 and p is
// longer than recSmall), then the rest in records of at most chunk
// bytes, and writes them out, as many records a write as its buffer
// holds (one of 256 KiB and some smaller ones).
func (rw *recordWriter) write(p []byte, first, chunk int) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return 0, rw.err
	}
	if rw.done {
		return 0, errors.New("datachan: write after the end record")
	}
	if len(p) <= recSmall {
		first, chunk = 0, recSmall
	}
	written := 0 // bytes of p whose records are on the connection
	for n := 0; n < len(p); {
		size := min(chunk, len(p)-n)
		if n == 0 && first > 0 {
			size = min(first, len(p))
		}
		if len(rw.buf) > 0 && len(rw.buf)+recHeaderLen+size+recTagLen > cap(rw.buf) {
			if err := rw.flush(); err != nil {
				return written, err
			}
			written = n
		}
		if err := rw.seal(p[n:n+size], false); err != nil {
			return written, err
		}
		n += size
	}
	if err := rw.flush(); err != nil {
		return written, err
	}
	return len(p), nil
}

// seal appends one record of p to buf.
func (rw *recordWriter) seal(p []byte, end bool) error {
	if rw.buf == nil {
		rw.buf = make([]byte, 0, recWriteBuf)
	}
	aead, err := rw.keys.forRecord(rw.seq)
	if err != nil {
		rw.err = fmt.Errorf("datachan: data record keys: %w", err)
		return rw.err
	}
	rw.seq++
	h := uint32(len(p) + recTagLen)
	if end {
		h |= recEndBit
	}
	start := len(rw.buf)
	rw.buf = binary.BigEndian.AppendUint32(rw.buf, h)
	rw.buf = aead.Seal(rw.buf, rw.keys.nonce[:], p, rw.buf[start:start+recHeaderLen])
	return nil
}

func (rw *recordWriter) flush() error {
	if len(rw.buf) == 0 {
		return nil
	}
	_, err := rw.w.Write(rw.buf)
	rw.buf = rw.buf[:0]
	if err != nil {
		rw.err = err
	}
	return err
}

// endLocked sends the end record, once; the caller holds the lock.
func (rw *recordWriter) endLocked() error {
	if rw.err != nil || rw.done {
		return rw.err
	}
	rw.done = true
	if err := rw.seal(nil, true); err != nil {
		return err
	}
	return rw.flush()
}

// recordReader opens records. It reads ahead into buf as much as the
// connection has, and decrypts a record straight into the caller's
// buffer when it fits there, else in place, handing the plaintext out
// over the next Reads.
type recordReader struct {
	r        io.Reader
	keys     recordKeys
	seq      uint64
	buf      []byte
	pos, end int    // unread bytes of buf
	plain    []byte // opened bytes not yet returned (inside buf)
	err      error  // sticky; io.EOF after the end record
}

func (rr *recordReader) Read(p []byte) (int, error) {
	if len(rr.plain) > 0 {
		n := copy(p, rr.plain)
		rr.plain = rr.plain[n:]
		return n, nil
	}
	if rr.err != nil {
		return 0, rr.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := rr.next(p)
	if err != nil && !isTimeout(err) {
		// A timeout leaves the stream whole (next consumes nothing of a
		// record it could not read); anything else ends it.
		rr.err = err
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// next reads and opens one record.
func (rr *recordReader) next(p []byte) (int, error) {
	if rr.buf == nil {
		rr.buf = make([]byte, recReadBuf)
	}
	if err := rr.fill(recHeaderLen); err != nil {
		return 0, err
	}
	h := binary.BigEndian.Uint32(rr.buf[rr.pos:])
	end := h&recEndBit != 0
	size := int(h &^ recEndBit)
	if size < recTagLen || size > recMaxPlain+recTagLen || end && size != recTagLen || !end && size == recTagLen {
		// Damage on the way as likely as a peer's breach: its length is
		// read before any check (review 57b).
		return 0, &damagedStream{fmt.Errorf("%w: data record of %d bytes (end %v)", ErrProtocol, size, end)}
	}
	if err := rr.fill(recHeaderLen + size); err != nil {
		return 0, err
	}
	aad := rr.buf[rr.pos : rr.pos+recHeaderLen]
	ct := rr.buf[rr.pos+recHeaderLen : rr.pos+recHeaderLen+size]
	aead, err := rr.keys.forRecord(rr.seq)
	if err != nil {
		return 0, fmt.Errorf("datachan: data record keys: %w", err)
	}
	rr.seq++
	rr.pos += recHeaderLen + size
	if size-recTagLen <= len(p) {
		pt, err := aead.Open(p[:0], rr.keys.nonce[:], ct, aad)
		if err != nil {
			return 0, errRecordAuth
		}
		if end {
			return 0, io.EOF
		}
		return len(pt), nil
	}
	pt, err := aead.Open(ct[:0], rr.keys.nonce[:], ct, aad)
	if err != nil {
		return 0, errRecordAuth
	}
	n := copy(p, pt)
	rr.plain = pt[n:]
	return n, nil
}

// fill makes sure buf holds n unread bytes. The connection ending first,
// even between records, means the stream was cut: a whole one ends
// with its end record.
func (rr *recordReader) fill(n int) error {
	if rr.end-rr.pos >= n {
		return nil
	}
	// Read no further than the next record's header: what is read past
	// it has to be moved to the front of buf before the next record,
	// about a quarter of the bytes with 256 KiB records. Then the move
	// is of a few header bytes at most.
	limit := rr.pos + n + recHeaderLen
	if limit > len(rr.buf) {
		rr.end = copy(rr.buf, rr.buf[rr.pos:rr.end])
		rr.pos = 0
		limit = n + recHeaderLen
	}
	m, err := io.ReadAtLeast(rr.r, rr.buf[rr.end:limit], rr.pos+n-rr.end)
	rr.end += m
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errRecordTruncated
	}
	return err
}
