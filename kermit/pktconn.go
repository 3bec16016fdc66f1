package kermit

import (
	"bytes"
	"errors"
	"io"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"

	"kerf/framing"
)

// inPacket is what the reader goroutine hands the engine: a good packet,
// a damaged one (bad), or the end of the stream (err).
type inPacket struct {
	framing.Packet
	bad bool
	// chk3: it passed only a type-3 check (or said "5"), while no
	// Send-Init is agreed: perhaps from a peer that forces type 3 on
	// every packet (Session.got decides).
	chk3 bool
	// parity: the packet carried this parity ("even", "odd", "mark") on
	// a link read as 8-bit, found while detecting (Session.got follows).
	parity string
	// weak: it passed only the type-1 check while type 2 or 3 is
	// agreed (a transaction's first packet, or a restarted peer's E).
	weak  bool
	err   error
	wireN int // bytes the packet occupied on the wire
	// inDamage: a damaged one whose mark came after damage with no end
	// of line before it, so most likely a mark the line made inside a
	// damaged packet, not where one begins (Session.sameDamage).
	inDamage bool
	// fx: an F or X packet, good or (a whole one under another
	// check type) bad; fileID: of such a packet, how many the link has
	// brought, this one included: on a reliable link its file id as the
	// peer counts it (protocol.md §4.1), whatever reads it.
	fx     bool
	fileID uint32
}

// pktConn frames Kermit packets over a byte stream. One goroutine reads
// and parses; the engine writes from its own single goroutine.
type pktConn struct {
	rw      io.ReadWriter
	fileIDs uint32 // F and X packets read (the reader's own)
	mark    byte
	parity  atomic.Bool // 7-bit: the 8th bit of every byte read is ignored
	// detectParity: no Send-Init is agreed yet and the peer's parity may
	// be found (Config.DetectParity); the reader then sets parity itself.
	detectParity atomic.Bool
	rchk         atomic.Int32 // check type expected on incoming packets
	// force3: the peer uses type 3 on every packet (C-Kermit's block
	// check 5), so this side does too, whatever was negotiated. Set and
	// cleared by the engine only (from the start, or on a chk3 packet);
	// the reader just reads it.
	force3 atomic.Bool
	// probe3: this transaction has agreed no Send-Init yet, so a packet
	// that passes only a type-3 check may still be a FORCE-3 peer's.
	// (Later, a damaged packet that happened to pass a type-3 check must
	// not be taken for one.)
	probe3 atomic.Bool
	// rawIn counts the bytes read; rawAtPacket is what it was at the
	// end of the last packet found (whole or damaged): what came since
	// is a packet still arriving, or noise (Session.packetArriving).
	rawIn, rawAtPacket atomic.Int64

	// outgoing framing, owned by the engine goroutine
	wchk     framing.CheckType
	eol      byte
	npad     int
	padc     byte
	written  int64 // bytes written, for statistics
	buffered bool  // queue writes until flush (network links)
	// wpar: parity this side applies to what it writes, on a link that
	// does not apply it itself (Session.followParity).
	wpar    framing.Parity
	pbuf    []byte // wpar's copy of the bytes written
	out     []byte
	scratch []byte // send's encoding buffer
	queued  int    // packets in out
	// flushAfter writes out once it holds this many packets, so that the
	// peer starts on the first ones while we produce the rest: with only
	// "flush before waiting", sender and receiver would take turns a
	// window at a time instead of working at once. 0 means no limit.
	flushAfter int
	// beforeFlush, if set, runs first in every flush (DataPath.Flush).
	beforeFlush func() error

	// ctrlCQuits: three Ctrl-C between packets end the link
	// (Config.CtrlCQuits); ctrlCs counts those in a row (the reader's).
	ctrlCQuits bool
	ctrlCs     int

	in       chan inPacket
	done     chan struct{}
	stopOnce sync.Once
	// lost is closed when the reader meets the end of the stream or a
	// read error: the link is gone, whatever packets are still queued.
	lost chan struct{}
}

func newPktConn(rw io.ReadWriter, parity bool, mark byte, ctrlCQuits bool) *pktConn {
	c := &pktConn{
		rw:         rw,
		mark:       mark,
		ctrlCQuits: ctrlCQuits,
		wchk:       1,
		eol:        '\r',
		in:         make(chan inPacket, 128),
		done:       make(chan struct{}),
		lost:       make(chan struct{}),
	}
	c.parity.Store(parity)
	c.rchk.Store(1)
	c.probe3.Store(true)
	go c.readLoop()
	return c
}

// LinkError is a failure of the link itself (the connection or line),
// not of the protocol on it: Op is "reading" or "writing".
type LinkError struct {
	Op  string
	Err error
}

func (e *LinkError) Error() string {
	if e.Closed() {
		// The other end closed the connection (or the line's input
		// ended) without an E to say why; a line may know more (a
		// command's exit status).
		if e.Err != io.ErrUnexpectedEOF {
			return "kermit: reading link: closed by the other end without a word: " + e.Err.Error()
		}
		return "kermit: reading link: closed by the other end without a word (unexpected EOF)"
	}
	return "kermit: " + e.Op + " link: " + e.Err.Error()
}

// Closed reports whether the link ended because the other end closed it.
func (e *LinkError) Closed() bool  { return e.Op == "reading" && errors.Is(e.Err, io.ErrUnexpectedEOF) }
func (e *LinkError) Unwrap() error { return e.Err }

func (c *pktConn) stop() { c.stopOnce.Do(func() { close(c.done) }) }

// ErrCtrlC ends a session whose line is the user's terminal when three
// Ctrl-C are typed between packets (Config.CtrlCQuits).
var ErrCtrlC = errors.New("interrupted at the terminal (Ctrl-C three times)")

// ctrlCQuit counts the Ctrl-C in a row among bytes read between
// packets, and reports whether three have come.
func (c *pktConn) ctrlCQuit(b []byte) bool {
	if !c.ctrlCQuits {
		return false
	}
	for _, x := range b {
		if x&0x7f == 3 { // (parity or not)
			if c.ctrlCs++; c.ctrlCs >= 3 {
				return true
			}
		} else {
			c.ctrlCs = 0
		}
	}
	return false
}

// quit ends the reader for ErrCtrlC, as a lost link ends it.
func (c *pktConn) quit() {
	close(c.lost)
	c.deliver(inPacket{err: &LinkError{Op: "reading", Err: ErrCtrlC}})
}

// readLoop scans the byte stream for packets. It frames by length, not
// by terminator, and on damage skips one byte and rescans, so a garbled
// LEN never swallows the packets behind it: data fields never carry a raw
// MARK, so the next MARK is the next packet start.
func (c *pktConn) readLoop() {
	buf := make([]byte, 0, 64*1024)
	tmp := make([]byte, 32*1024)
	var raw []byte // scan's scratch
	// damaged: bytes were skipped as damage since the last good packet;
	// last: the last byte passed over before the packet mark (-1: none
	// since the last good packet). Together they say whether a mark may
	// be inside damage (scanState.inDamage).
	damaged, last := false, -1
	for {
		// Drain every complete packet already buffered.
		for {
			st := c.scanState()
			i := indexMark(buf, st.mark, st.parity || st.detect)
			skipped := buf // (what lies before a packet: noise, or typing)
			if i >= 0 {
				skipped = buf[:i]
			}
			if c.ctrlCQuit(skipped) {
				c.quit()
				return
			}
			if i < 0 {
				if len(buf) > 0 {
					last = int(buf[len(buf)-1])
				}
				buf = buf[:0]
				break
			}
			c.ctrlCs = 0 // a packet begins
			if i > 0 {
				last = int(buf[i-1])
				buf = append(buf[:0], buf[i:]...)
			}
			st.inDamage = damaged && !endsLine(last, st.parity || st.detect)
			ip, n, v := scan(buf, st, &raw)
			if v == scanMore {
				break
			}
			if v == scanBad {
				damaged, last = true, int(buf[n-1])
			} else {
				damaged, last = false, -1
			}
			if ip.parity != "" {
				c.parity.Store(true)
				c.detectParity.Store(false)
			}
			if ip.fx {
				c.fileIDs++
				ip.fileID = c.fileIDs
			}
			if !c.deliver(ip) {
				return
			}
			buf = append(buf[:0], buf[n:]...)
			c.rawAtPacket.Store(c.rawIn.Load() - int64(len(buf)))
		}
		if len(buf) > 2*framing.MaxLongLen+64 {
			// Cannot happen with a valid LEN; protect memory anyway.
			buf = buf[:0]
		}
		m, err := c.rw.Read(tmp)
		if m > 0 {
			buf = append(buf, tmp[:m]...)
			c.rawIn.Add(int64(m))
		}
		if err != nil {
			close(c.lost)
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			c.deliver(inPacket{err: &LinkError{Op: "reading", Err: err}})
			return
		}
	}
}

// scanState is what the reader knows of the link's framing while it
// scans: read from pktConn's atomics once per packet.
type scanState struct {
	// inDamage: the mark follows damage since the last good packet
	// with no end of line right before it, so it may be one a line
	// error made inside a damaged packet's data rather than where a
	// packet begins.
	inDamage bool
	mark     byte
	chk      framing.CheckType // expected on incoming packets
	parity   bool              // 7-bit link: 8th bits are ignored
	detect   bool              // no parity yet, and it may be found
	force3   bool              // the peer uses type 3 on every packet
	probe3   bool              // a FORCE-3 peer may yet show itself (never with force3)
}

// scanState reads the reader's view of the link.
func (c *pktConn) scanState() scanState {
	st := scanState{
		mark:   c.mark,
		chk:    framing.CheckType(c.rchk.Load()),
		parity: c.parity.Load(),
		force3: c.force3.Load(),
	}
	st.detect = !st.parity && c.detectParity.Load()
	st.probe3 = c.probing3()
	return st
}

// probing3 reports whether a peer forcing type 3 may yet show itself:
// no Send-Init agreed in this transaction, and none found so far.
func (c *pktConn) probing3() bool { return c.probe3.Load() && !c.force3.Load() }

// scanVerdict says what scan found at the front of the buffer.
type scanVerdict int

const (
	scanGood scanVerdict = iota // a packet, n bytes long
	scanBad                     // damage: report it and skip n bytes
	scanMore                    // maybe a packet, not all here yet
)

// scan judges the bytes at the front of buf, which begin with a packet
// mark: a good packet (with what it showed of the peer's check type or
// parity), damage, or too few bytes to tell. It parses in place (7-bit
// parses clear the 8th bits they read); raw is scratch space for the
// trial parse of parity detection. It is the reader's whole policy on
// block checks and parity, and does no I/O.
func scan(buf []byte, st scanState, raw *[]byte) (ip inPacket, n int, v scanVerdict) {
	f := framing.Frame{Mark: st.mark, Check: st.chk, Parity: st.parity}
	p, n, chk3, weak, err := parseAs(buf, f, st)
	if st.detect && err != nil {
		// Perhaps the peer uses parity: a packet that reads whole as
		// 7-bit, every 8th bit following one parity, is taken as such,
		// and so is everything after it (the caller switches the link).
		// On a copy, since a 7-bit parse clears the 8th bits it reads.
		f.Parity = true
		*raw = append((*raw)[:0], buf...)
		p7, n7, chk3x, weak7, err7 := parseAs(*raw, f, st)
		switch {
		case err7 == nil:
			if kind := parityOf(buf[:n7]); kind != "" {
				p, n, chk3, weak, err = p7, n7, chk3x, weak7, nil
				ip.parity = kind
			}
		case errors.Is(err7, framing.ErrIncomplete):
			err = err7 // perhaps a packet with parity, not all here yet
		}
	}
	if errors.Is(err, framing.ErrIncomplete) {
		// (ParsePacket calls a second MARK inside damage, since it
		// means the header was garbled. While detecting parity a
		// parity-marked one, 0x81, is not seen so until the packet is
		// whole; detection ends with the first Send-Init.)
		return inPacket{}, 0, scanMore
	}
	if err != nil {
		bad := inPacket{bad: true, inDamage: st.inDamage}
		// A whole F or X under another check type is, on a reliable
		// link, one sent with the check of a transaction this side
		// has ended (the rest of a group its E ended, sent ahead):
		// still damage here, but a file id the peer counted.
		for c := framing.CheckType(1); c <= 3 && !st.parity && !st.detect; c++ {
			if c != st.chk {
				other := framing.Frame{Mark: st.mark, Check: c}
				if q, _, err := other.ParsePacket(buf); err == nil {
					bad.fx = q.Type == 'F' || q.Type == 'X'
					break
				}
			}
		}
		// Skip one byte only: a garbled LEN may cover the next packet.
		return bad, 1, scanBad
	}
	ip.Packet = framing.Packet{Seq: p.Seq, Type: p.Type & 0x7f, Data: append([]byte(nil), p.Data...)}
	ip.fx = ip.Type == 'F' || ip.Type == 'X'
	ip.chk3 = chk3
	ip.weak = weak
	ip.wireN = n
	return ip, n, scanGood
}

// parseAs parses the packet at the front of buf with frame f, and
// failing that, or for a FORCE-3 peer's init packets, with the other
// check type a packet there may use (chk3: it passed type 3 only).
func parseAs(buf []byte, f framing.Frame, st scanState) (p framing.Packet, n int, chk3, weak bool, err error) {
	p, n, err = f.ParsePacket(buf)
	if errors.Is(err, framing.ErrIncomplete) {
		return p, n, false, false, err
	}
	if err != nil && st.chk != 1 {
		// S and I, and the commands that start a transaction (R, G and
		// C-Kermit's variants), always use check 1; so does the E of a
		// peer restarted mid-transfer, which has agreed nothing yet. All
		// are the first packet of a transaction, numbered 0, and only
		// with 0 are they taken: a damaged packet passes the 6-bit check
		// one time in 64, and one whose type damage made E ended a
		// transfer with its data as the peer's message (QA: lineem at
		// BER 1e-3, "peer error: all been sound long which word do..."),
		// and one made C or R by a character a slipping line added
		// ended one as a command in the middle of a file (1 run in 150
		// of a test dropping and adding a character in 1,000).
		//
		// Nor after damage unless an end of line comes right before the
		// mark: a line error that makes a mark inside a damaged packet's
		// data starts a packet of whatever bytes follow, and one in
		// about 80,000 such is numbered 0, typed E and passes the 6-bit
		// check (BER 5e-4, 9 KB packets: 1 run in 200 ended with a D's
		// data as the peer's message). A peer's own packet follows the
		// end of line of the one before it. (Where this side forces
		// type 3, such a packet is a peer that does not: Session.got.)
		f.Check = 1
		weakTypes := initTypes + "E"
		if st.force3 {
			// And the NAK of a peer that cannot read this side's
			// type-3 Send-Init (G-Kermit has no block check 5): it
			// NAKs it in type 1 until it gives up (QA an: 101 s of
			// retries, no reason given). Session.got judges it.
			weakTypes += "N"
		}
		if p1, n1, err1 := f.ParsePacket(buf); err1 == nil && !st.inDamage && p1.Seq == 0 && strings.IndexByte(weakTypes, p1.Type&0x7f) >= 0 {
			p, n, weak, err = p1, n1, true, nil
		}
	}
	if st.chk != 3 && st.probe3 {
		// Except from a FORCE-3 peer, whose every packet has type 3: an
		// init packet, command or ACK that passes only type 3 is handed
		// on marked, for the engine to judge (Session.got). One that
		// passes type 1 by chance as well is taken as type 3 when it
		// says "5".
		f.Check = 3
		if p3, n3, err3 := f.ParsePacket(buf); err3 == nil && (err != nil || says5(p3)) && isInitOrAck(p3) {
			return p3, n3, true, false, nil
		}
	}
	return p, n, false, weak, err
}

// isInitOrAck reports whether p may be the first packet of a
// transaction, an ACK, or a NAK (of a Send-Init a FORCE-3 peer could
// not read): the packets a FORCE-3 peer's type-3 check is looked for on.
func isInitOrAck(p framing.Packet) bool {
	return strings.IndexByte(initTypes+"YN", p.Type&0x7f) >= 0
}

// endsLine reports whether the byte c (-1: none) ends a line, CR or LF
// (with parity, in its low 7 bits): what a peer's packet ends with (the
// EOL kerf asks for is CR; some lines add LF).
func endsLine(c int, parity bool) bool {
	if c < 0 {
		return false
	}
	if parity {
		c &= 0x7f
	}
	return c == '\r' || c == '\n'
}

// indexMark returns the index of the first packet mark in b; with
// parity, of the first byte whose low 7 bits are the mark.
func indexMark(b []byte, mark byte, parity bool) int {
	if !parity {
		return bytes.IndexByte(b, mark)
	}
	for i, c := range b {
		if c&0x7f == mark {
			return i
		}
	}
	return -1
}

// parityOf returns the parity every byte of b carries in its 8th bit:
// "mark" (always set), "even" or "odd"; "" if none fits, or if no byte
// has its 8th bit set (no parity, or space parity, which needs no
// following to be read).
func parityOf(b []byte) string {
	mark, even, odd, any := true, true, true, false
	for _, c := range b {
		set := c&0x80 != 0
		any = any || set
		ones := bits.OnesCount8(c & 0x7f)
		mark = mark && set
		even = even && set == (ones%2 == 1)
		odd = odd && set == (ones%2 == 0)
	}
	switch {
	case !any:
		return ""
	case mark:
		return "mark"
	case even:
		return "even"
	case odd:
		return "odd"
	}
	return ""
}

// says5 reports whether p is a Send-Init or its ACK asking for type 3
// on every packet (CHKT, the 8th field, "5").
func says5(p framing.Packet) bool {
	t := p.Type & 0x7f
	return (t == 'S' || t == 'I' || t == 'Y') && framing.ForcesCheck3(p.Data)
}

// initTypes are the packets that start a transaction: S and I, and the
// commands (R, G and C-Kermit's variants). They use the type-1 check
// whatever the last transaction agreed, unless the peer forces type 3.
const initTypes = "SIRGVJHCKO"

func (c *pktConn) deliver(p inPacket) bool {
	select {
	case c.in <- p:
		return true
	case <-c.done:
		return false
	}
}

// setCheck switches the block check for both directions (to type 3,
// whatever t, with a FORCE-3 peer).
func (c *pktConn) setCheck(t framing.CheckType) {
	if c.force3.Load() {
		t = 3
	}
	c.wchk = t
	c.rchk.Store(int32(t))
}

// encode returns the wire bytes of one packet (padding, packet, EOL).
func (c *pktConn) encode(p framing.Packet, chk framing.CheckType) ([]byte, error) {
	return c.appendWire(make([]byte, 0, c.npad+len(p.Data)+16), p, chk)
}

// appendWire appends the wire bytes of one packet to b.
func (c *pktConn) appendWire(b []byte, p framing.Packet, chk framing.CheckType) ([]byte, error) {
	for i := 0; i < c.npad; i++ {
		b = append(b, c.padc)
	}
	if c.force3.Load() {
		chk = 3
	}
	f := framing.Frame{Mark: c.mark, Check: chk, Parity: c.parity.Load()}
	b, err := f.AppendPacket(b, p)
	if err != nil {
		return nil, err
	}
	return append(b, c.eol), nil
}

// writeRaw writes b, or with buffering on, queues it until the engine is
// about to wait (flush): on a network link many small control packets
// then travel in one write instead of waking the peer once each.
func (c *pktConn) writeRaw(b []byte) error {
	c.written += int64(len(b))
	if c.buffered {
		c.out = append(c.out, b...)
		c.queued++
		if len(c.out) < 64<<10 && (c.flushAfter == 0 || c.queued < c.flushAfter) {
			return nil
		}
		return c.flush()
	}
	if _, err := c.write(b); err != nil {
		return &LinkError{Op: "writing", Err: err}
	}
	return nil
}

// write writes b to the link, with the parity the peer was found to use
// when the link cannot apply it itself (wpar; a TCP connection to a
// C-Kermit told SET PARITY).
func (c *pktConn) write(b []byte) (int, error) {
	if c.wpar == framing.ParityNone {
		return c.rw.Write(b)
	}
	c.pbuf = c.wpar.AppendParity(c.pbuf[:0], b)
	return c.rw.Write(c.pbuf)
}

// flush writes whatever writeRaw queued, after the data path's held-back
// data (beforeFlush).
func (c *pktConn) flush() error {
	if c.beforeFlush != nil {
		if err := c.beforeFlush(); err != nil {
			return err
		}
	}
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.write(c.out)
	c.out = c.out[:0]
	c.queued = 0
	if err != nil {
		return &LinkError{Op: "writing", Err: err}
	}
	return nil
}

// send encodes and writes one packet with the current check type. The
// packet is not kept (ACKs, NAKs, streamed D), so it is encoded into a
// buffer reused for the next.
func (c *pktConn) send(seq int, typ byte, data []byte) error {
	b, err := c.appendWire(c.scratch[:0], framing.Packet{Seq: seq, Type: typ, Data: data}, c.wchk)
	if err != nil {
		return err
	}
	c.scratch = b
	return c.writeRaw(b)
}
