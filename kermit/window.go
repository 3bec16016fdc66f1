package kermit

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"kerf/framing"
)

// slot is one packet the sender has written and not yet seen ACKed.
type slot struct {
	seq    int
	typ    byte
	data   []byte
	wire   []byte
	chk    framing.CheckType // the check wire was encoded with
	sentAt time.Time
	expect time.Time // when the link should have finished carrying it
	// firstExpect is expect of its first copy: the peer's silence on it
	// counts from there.
	firstExpect time.Time
	sends       int
	damaged     int    // copies the peer said it got damaged (sent again by retransmitLost)
	sendNo      uint64 // order of the latest transmission, for loss detection
	// unanswered counts the copies whose answer (ACK or NAK) has not
	// come; a timeout takes the earlier ones for lost. A NAK that leaves
	// none unanswered is the latest copy's (nakOfLatest).
	unanswered int
	// stalled: a timeout has sent this packet again, the window's
	// lowest: the window waits on it (stalledCopyLost, nakOfLatest).
	stalled   bool
	acked     bool
	ackData   []byte
	fileBytes int
	onAck     func(data []byte) error
	replies   string         // packet types besides Y that answer this one (R, G: "S")
	ackType   byte           // type of the answer
	reply     framing.Packet // the answer, when it was not a Y
}

// sendWindow tracks unacknowledged packets by sequence number.
type sendWindow struct {
	slots [64]*slot
	lo    int // oldest unacknowledged sequence number (== next when empty)
	next  int // sequence number of the next new packet
	count int
	bytes int // wire bytes of the packets in flight
	size  int
}

func (w *sendWindow) reset(size int) {
	*w = sendWindow{size: clamp(size, 1, 31)}
}

func (w *sendWindow) inFlight(seq int) *slot {
	d := (seq - w.lo + 64) % 64
	if d >= w.count {
		return nil
	}
	return w.slots[seq]
}

// rttEstimator is Jacobson/Karels' smoothed round trip (RFC 6298).
type rttEstimator struct {
	srtt, rttvar, rto time.Duration
	min, max          time.Duration
	// least is the smallest sample: the path's own round trip, without
	// the receiver's work (an ACK of Z waits for the file's data) or
	// queueing.
	least time.Duration
}

func (r *rttEstimator) init(initial time.Duration) {
	r.srtt, r.rttvar = 0, 0
	r.rto = initial
	if r.max == 0 {
		r.max = 60 * time.Second
	}
}

func (r *rttEstimator) sample(d time.Duration) {
	if r.least == 0 || d < r.least {
		r.least = d
	}
	if r.srtt == 0 {
		r.srtt, r.rttvar = d, d/2
	} else {
		diff := r.srtt - d
		if diff < 0 {
			diff = -diff
		}
		r.rttvar = (3*r.rttvar + diff) / 4
		r.srtt = (7*r.srtt + d) / 8
	}
	r.rto = r.srtt + 4*r.rttvar
	r.clampRTO()
}

func (r *rttEstimator) backoff() {
	r.rto *= 2
	r.clampRTO()
}

// restore undoes backoff: the timeout goes back to what the samples so
// far give (none yet: it stays).
func (r *rttEstimator) restore() {
	if r.srtt == 0 {
		return
	}
	r.rto = r.srtt + 4*r.rttvar
	r.clampRTO()
}

func (r *rttEstimator) clampRTO() {
	if r.rto < r.min {
		r.rto = r.min
	}
	if r.max > 0 && r.rto > r.max {
		r.rto = r.max
	}
}

// lengthAdapter picks the D-packet length from the observed loss rate.
// A packet of L bytes survives with probability (1-p)^L; the useful
// fraction L/(L+h) * (1-p)^L peaks near L = sqrt(h/p), so with no loss we
// use the longest packet and under noise we shrink towards that optimum.
type lengthAdapter struct {
	max    int
	cap    int     // slow-start ceiling: doubles per good ACK, halves per loss
	bytes  float64 // wire bytes of packets sent (countsForLength; decayed)
	losses float64 // of those, packets lost or damaged (decayed)
}

// dataLen is the most encoded data the next D packet may carry: all the
// peer takes when streaming, else what the line's loss rate makes best
// (lengthAdapter), and to a classic peer that waits for each ACK a short
// packet whose LEN no single bit error can ruin (stopAndWaitLen).
func (s *Session) dataLen() int {
	most := s.neg.maxData
	if s.neg.streaming {
		return most
	}
	if s.neg.window > 1 {
		return min(most, s.adapt.size())
	}
	// Stop and wait: each packet also pays the wait for its ACK, which
	// makes longer packets worth their risk; but only as long as the
	// line has shown it lets most of them through, since a receiver
	// that waits for each packet gives up after ten tries of one
	// (kerf to G-Kermit at BER 1e-3, a packet sized from the loss rate of
	// the first 700 bytes: 332 bytes, 7% of them whole, ten tries in 0.3
	// s).
	want := s.adapt.size()
	if tb := s.turnaroundBytes(); tb > 0 {
		want = max(want, min(s.adapt.sizeFor(packetOverhead+tb), s.adapt.safeLen()))
	}
	want = min(most, want)
	if s.neg.peerKerf {
		return want
	}
	return stopAndWaitLen(want, min(most, s.neg.shortData), s.neg.check.Len())
}

// turnaroundBytes is the line time a stop-and-wait sender spends waiting
// for each ACK, in bytes at the line's speed: the least round trip a D
// packet's ACK has taken (from the end of its line time), which on a
// long link (150 ms each way: 3,456 bytes at 115200 bps) is worth more
// than any packet's header. D packets only: the answers to S, F and A
// wait for the peer's file handling, and round trips that long taken
// early made the first packets long on a noisy line (twenty-eighth
// session). 0 while no D packet has been answered or the speed is
// unknown.
func (s *Session) turnaroundBytes() float64 {
	if s.dTurnaround <= 0 || s.cfg.LineSpeed <= 0 {
		return 0
	}
	return s.dTurnaround.Seconds() * float64(s.lineSpeed()) / 10
}

// stopAndWaitLen sizes data packets for a stop-and-wait classic receiver
// (G-Kermit) on a noisy line, where the adapter asked for want bytes and
// a short packet holds at most short.
//
// G-Kermit 2.01 frames a packet by its LEN field and, after its first
// read timeout, never times out again (it leaves the timeout handler
// with longjmp, so SIGALRM stays blocked): a packet whose LEN a bit error
// made a control character (no length: it reads until its buffer
// overflows and exits) or a blank (a long packet, its length then taken
// from data bytes, up to 9,029) leaves it waiting for bytes that never
// come, and the transfer stalls. A LEN of 66 to 94 (the characters 'b'
// to '~': bits 5 and 6 both set) stays a plain length under any single
// bit error, where every LEN below it and the long packets' blank have
// one bit that does this. So on a line noisy enough for packets near or
// under a short one's length, the packets are short ones with LEN of at
// least 66; with a turnaround per packet such lengths cost little or
// nothing against the adapter's shorter ones (which count no ACK).
func stopAndWaitLen(want, short, chk int) int {
	// LEN counts SEQ, TYPE, the data and the check; the encoder may
	// leave up to 4 bytes unused (a repeated 8th-bit control character
	// is a unit of 5).
	least := 66 - 2 - chk + 4
	if short < least || want >= 2*short {
		return want
	}
	return clamp(want, least, short)
}

// countsForLength says whether packets of type typ feed the length
// adapter: every packet after the Send-Init, so that an F or A damaged on
// the way shows the line's noise before the first D packet is sized (a
// 256-byte first D packet to G-Kermit at BER 1e-3 failed its ten tries
// in most runs). Not the Send-Init itself: a receiver started late NAKs
// it on its own timer, which says nothing of the line.
func countsForLength(typ byte) bool { return typ != 'S' && typ != 'I' }

const packetOverhead = 12 // MARK LEN SEQ TYPE LENX1 LENX2 HCHECK CHECK(3) EOL + slack

// init starts small, as C-Kermit does: a long packet queued on a noisy
// line may never get through, and a sent packet cannot be resized.
func (a *lengthAdapter) init(max int) { *a = lengthAdapter{max: max, cap: min(max, 256)} }

func (a *lengthAdapter) good() { a.cap = min(a.max, a.cap*2) }

// The estimate remembers roughly the last 256-512 KB sent, so it follows
// a line whose noise changes and recovers once the noise stops.
func (a *lengthAdapter) sent(n int) {
	a.bytes += float64(n)
	if a.bytes > 512<<10 {
		a.bytes /= 2
		a.losses /= 2
	}
}

func (a *lengthAdapter) lost() {
	a.cap = max(40, a.cap/2)
	a.losses++
}

func (a *lengthAdapter) size() int { return a.sizeFor(packetOverhead) }

// safeLen is the longest packet that half its copies would get through
// at a loss rate as high as the line may have: three losses more than
// seen (about the 95% bound of a count, with none seen), so that early,
// with few bytes sent, it is short.
func (a *lengthAdapter) safeLen() int {
	if a.bytes <= 0 {
		return a.cap
	}
	p := (a.losses + 3) / a.bytes
	return int(min(math.Ln2/p, math.MaxInt32))
}

// sizeFor is the best length for packets that each cost h bytes of line
// beyond their data.
func (a *lengthAdapter) sizeFor(h float64) int {
	if a.bytes <= 0 {
		return a.cap
	}
	// A tenth of a loss is assumed before the first is seen: a packet
	// grows to the maximum only as clean bytes accumulate, because a long
	// packet already queued cannot be shortened if the line is noisy.
	p := (a.losses + 0.1) / a.bytes
	l := int(min(math.Sqrt(h/p), math.MaxInt32))
	return clamp(l, 40, max(a.cap, 40))
}

// --- sender side -------------------------------------------------------

// awaitRoom handles replies until the window has room for a packet, and
// then every reply already come: a burst of answers is taken whole
// before the next packet is sized, not an ACK at a time, each sizing a
// packet before the NAKs behind it were seen (ACKs of 3 to 11 then a
// NAK of 12 made nine packets of 0.5-1.4 KB on a line that let one in
// eight through at that length).
func (s *Session) awaitRoom(ctx context.Context) error {
	for s.sw.count >= s.sw.size {
		if err := s.pump(ctx, true); err != nil {
			return err
		}
	}
	for s.again == nil {
		select {
		case in := <-s.c.in:
			p, ok, err := s.got(in)
			if err != nil {
				return err
			}
			if ok {
				if err := s.handleReply(p); err != nil {
					return err
				}
			}
		default:
			return nil
		}
	}
	return nil
}

// queue writes a new packet once the window has room and returns its slot.
func (s *Session) queue(ctx context.Context, typ byte, data []byte, fileBytes int) (*slot, error) {
	for s.sw.count >= s.sw.size || s.lineFull(len(data)) {
		if err := s.pump(ctx, true); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seq := s.sw.next
	wire, err := s.c.encode(framing.Packet{Seq: seq, Type: typ, Data: data}, s.c.wchk)
	if err != nil {
		return nil, err
	}
	sl := &slot{seq: seq, typ: typ, data: data, wire: wire, chk: s.c.wchk, fileBytes: fileBytes}
	s.sw.slots[seq] = sl
	s.sw.next = (seq + 1) % 64
	s.sw.count++
	s.sw.bytes += len(wire)
	if err := s.transmit(sl); err != nil {
		return nil, err
	}
	return sl, nil
}

// lineFull reports whether a packet of n more bytes should wait because
// enough is already queued on a line of known speed: beyond what keeps
// the line busy, more bytes in flight only add delay, and packets sized
// before the line turned noisy could no longer be made shorter.
func (s *Session) lineFull(n int) bool {
	if s.cfg.LineSpeed <= 0 || s.sw.count == 0 {
		return false
	}
	speed := s.lineSpeed()
	ahead := speed / 10 / 4 // a quarter second of line
	if !s.neg.peerKerf {
		// C-Kermit's receiver counts every damaged packet against one
		// retry limit while it waits for a missing one, and gives up at
		// ten: keep fewer packets exposed at once.
		ahead /= 4
	}
	if rt := s.rtt.least; rt > 0 {
		// But never less than a round trip of line and a quarter: on a
		// line with latency (a satellite hop, a modem pair) the ACKs
		// take that long to come back, and with less in flight the line
		// idles while they do.
		ahead = max(ahead, int(float64(speed/10)*rt.Seconds()*1.25))
	}
	limit := max(3*(n+packetOverhead), ahead)
	return s.sw.bytes+n > limit
}

// stream writes a D packet that will not be acknowledged (streaming).
func (s *Session) stream(ctx context.Context, data []byte, fileBytes int) error {
	if s.sw.count > 0 && !s.streamPastAnswers() {
		// Packets of the window still unacknowledged (a file's F, when
		// no A was awaited: a peer without attribute packets) are
		// answered first: streaming moves the window past them, and
		// their ACKs would then be dropped, and waited for for ever.
		if err := s.drain(ctx); err != nil {
			return err
		}
	}
	for s.sw.count >= s.sw.size {
		if err := s.pump(ctx, true); err != nil {
			return err
		}
	}
	seq := s.sw.next
	s.sw.next = (seq + 1) % 64
	s.streamedFor[seq] = s.sendFileID
	if s.sw.count > 0 {
		// Behind packets still to be answered (this file's F and A, the
		// last file's Z): it holds its place in the window, answered
		// already, so that their answers are still told apart.
		s.sw.slots[seq] = &slot{seq: seq, typ: 'D', acked: true, fileBytes: fileBytes}
		s.sw.count++
	} else {
		s.sw.lo = s.sw.next
	}
	if err := s.c.send(seq, 'D', data); err != nil {
		return err
	}
	s.stats.PacketsSent++
	s.occupyLine(len(s.c.scratch))
	// Catch an E or a cancel without waiting for anything, and the
	// answers of the packets still in the window.
	for {
		select {
		case in := <-s.c.in:
			if s.sw.count == 0 {
				if err := s.handleStreamingReply(in); err != nil {
					return err
				}
				continue
			}
			p, ok, err := s.got(in)
			if err != nil {
				return err
			}
			if ok {
				if err := s.handleReply(p); err != nil {
					return err
				}
			}
			continue
		default:
		}
		return ctx.Err()
	}
}

// streamPastAnswers reports whether D packets may stream while packets
// before them wait for their answers: to a kerf receiver on a reliable
// link, which answers in order and drops the data of a file it refused
// (the sender did not wait for the A's verdict: a small file in band),
// so each file does not cost a round trip (QA ap).
func (s *Session) streamPastAnswers() bool {
	return s.neg.peerKerf && s.cfg.Reliable
}

func (s *Session) handleStreamingReply(p inPacket) error {
	switch {
	case p.err != nil:
		return p.err
	case p.bad:
		return fmt.Errorf("%w: damaged packet on a reliable link", ErrProtocol)
	case p.Type == 'E':
		msg := s.decodeMessage(p.Data)
		return &PeerError{Msg: msg}
	case p.Type == 'N':
		return fmt.Errorf("%w: NAK received on a reliable link", ErrProtocol)
	case p.Type == 'Y':
		s.noteStreamCancel(p.Seq, p.Data)
	}
	return nil
}

// noteStreamCancel is noteCancel of the answer to streamed D packet seq.
// Where the sender waits for no answer (streamPastAnswers), a file's
// cancel may come after the next files began: it is taken only while
// the file it names is the one being sent, and that file waited for its
// A's answer, which came after the receiver's cancel if it sent one (a
// pipelined file's fate is its Z's answer). Else a cancel of file k
// canceled file k+1 (review 58).
func (s *Session) noteStreamCancel(seq int, data []byte) {
	if len(data) == 1 && data[0] == 'X' && s.streamPastAnswers() && (s.pipelinedFile || s.streamedFor[seq] != s.sendFileID) {
		return
	}
	s.noteCancel(data)
}

func (s *Session) noteCancel(data []byte) {
	if len(data) == 1 {
		switch data[0] {
		case 'X':
			s.cancelFile.Store(true)
		case 'Z':
			s.cancelGroup.Store(true)
		}
	}
}

func (s *Session) transmit(sl *slot) error {
	switch {
	case s.c.force3.Load() && sl.chk != 3:
		// Queued before the peer turned out to force type 3.
		if err := s.reencode(sl, 3); err != nil {
			return err
		}
	case (sl.typ == 'S' || sl.typ == 'I') && s.c.probing3():
		// A peer that forces type 3 (C-Kermit's block check 5) cannot
		// read a type-1 Send-Init, and any other peer cannot read a
		// type-3 one: the tries alternate, type 1 first.
		chk := framing.CheckType(1)
		if sl.sends%2 == 1 {
			chk = 3
		}
		if chk != sl.chk {
			if err := s.reencode(sl, chk); err != nil {
				return err
			}
		}
	}
	s.sendNo++
	sl.sendNo = s.sendNo
	sl.sends++
	sl.unanswered++
	sl.sentAt = time.Now()
	sl.expect = sl.sentAt
	if s.cfg.LineSpeed > 0 {
		sl.expect = s.occupyLine(len(sl.wire))
	}
	if sl.sends == 1 {
		sl.firstExpect = sl.expect
	}
	s.stats.PacketsSent++
	if sl.sends > 1 {
		s.stats.Retransmissions++
		s.lastResend = sl.sentAt
	} else if countsForLength(sl.typ) {
		s.adapt.sent(len(sl.wire))
	}
	return s.c.writeRaw(sl.wire)
}

// occupyLine counts n bytes just written into the model of a line of
// known speed (LineSpeed) as a queue draining at that speed, and returns
// when they will have crossed it: a packet waiting behind a window of
// others, or behind streamed D packets, which have no slot, is then not
// timed out early. Without a known speed it returns now. The model is
// not capped at what a driver buffers: a serial server (ser2net) or a
// USB adapter may hold far more, and a timeout too early sends packets
// again (fatal to G-Kermit while streaming), where one too late, on a
// line faster than its stated speed, only waits longer on a loss.
func (s *Session) occupyLine(n int) time.Time {
	now := time.Now()
	if s.cfg.LineSpeed <= 0 {
		return now
	}
	if s.linkFree.Before(now) {
		s.linkFree = now
	}
	s.linkFree = s.linkFree.Add(lineTime(n, s.lineSpeed()))
	return s.linkFree
}

// lineSpeed is the speed the line's model runs at: LineSpeed, or the
// speed its ACKs show where that is slower (observeLineSpeed).
func (s *Session) lineSpeed() int {
	if s.lineSeen > 0 && s.lineSeen < s.cfg.LineSpeed {
		return s.lineSeen
	}
	return s.cfg.LineSpeed
}

// observeLineSpeed learns the line's speed from the ACK of D packet sl,
// sent once, at now: when sl was written before the previous such ACK
// came, it queued behind that packet, and on a busy line the two ACKs
// come sl's line time apart. Only a speed below LineSpeed is kept (a
// faster line is followed by lineFasterThanModel), smoothed over four
// ACKs. The receiver's own delays make a gap longer, never shorter, so
// the model errs late: a loss is found a little later, no packet is
// sent again while still queued. Without it, lineSlowerThanModel only
// shifted the packets in flight and the model fell behind again with
// each one written (a 9600 bps line at --speed 115200: three timeouts
// at the end of a file, each 9 KB packet 9.4 s on the line against the
// model's 0.8 s; docs/benchmarks.md, twenty-sixth session).
func (s *Session) observeLineSpeed(sl *slot, now time.Time) {
	if s.cfg.LineSpeed <= 0 || sl.typ != 'D' || sl.sends != 1 {
		return
	}
	prev, resent := s.lastDAck, s.stats.Retransmissions != s.lastDAckRetx
	s.lastDAck, s.lastDAckRetx = now, s.stats.Retransmissions
	gap := now.Sub(prev)
	if prev.IsZero() || !sl.sentAt.Before(prev) || gap <= 0 || resent {
		// The line may have idled before sl, or carried a packet sent
		// again in the gap.
		return
	}
	seen := min(int(float64(len(sl.wire))*10/gap.Seconds()), s.cfg.LineSpeed)
	if s.lineSeen == 0 {
		s.lineSeen = seen
	} else {
		s.lineSeen = (3*s.lineSeen + seen + 3) / 4 // rounded up: reaches seen
	}
}

// lineFasterThanModel corrects the line's model (occupyLine) by an ACK
// for sl that came at now, before the model had sl across the line: the
// line is faster than its stated speed (a pty, stdio, a USB adapter or
// a serial server whose speed is not the one given), so what was
// written after sl left that much sooner too. Uncorrected, a model run
// ahead by a fast line put a dead peer's timeout many minutes off (QA:
// 12 MB through a pty at the default 115200 put it 680 s after the
// peer was killed; now it is the window's line time at most).
func (s *Session) lineFasterThanModel(sl *slot, now time.Time) {
	ahead := sl.expect.Sub(now)
	if s.cfg.LineSpeed <= 0 || ahead <= 0 {
		return
	}
	for i, seq := 0, s.sw.lo; i < s.sw.count; i, seq = i+1, (seq+1)%64 {
		if o := s.sw.slots[seq]; o != nil && !o.acked && o.expect.After(sl.expect) {
			o.expect = o.expect.Add(-ahead)
		}
	}
	s.linkFree = s.linkFree.Add(-ahead)
	sl.expect = now
}

// lineSlowerThanModel corrects the line's model by an ACK for sl that
// came later than the model had sl across plus the path's own round
// trip (rtt.least): the line is slower than its stated speed (a modem
// whose line is slower than its port, a serial server pacing below the
// speed given), so what was written after sl is across that much later
// too. Uncorrected, the model ran further ahead with every packet and
// the packets behind timed out while still queued (QA: 200 KB through
// a 9600 bps line at --speed 115200 timed out every few packets). Only
// a D packet sent once, whose ACK is unambiguous and is not held up by
// the receiver's own work (as a Z's waits for the file to be stored).
func (s *Session) lineSlowerThanModel(sl *slot, now time.Time) {
	if s.cfg.LineSpeed <= 0 || sl.typ != 'D' || sl.sends != 1 {
		return
	}
	late := now.Sub(sl.expect) - s.rtt.least
	if late <= 0 {
		return
	}
	for i, seq := 0, s.sw.lo; i < s.sw.count; i, seq = i+1, (seq+1)%64 {
		if o := s.sw.slots[seq]; o != nil && !o.acked && o.expect.After(sl.expect) {
			o.expect = o.expect.Add(late)
		}
	}
	if s.linkFree.After(sl.expect) {
		s.linkFree = s.linkFree.Add(late)
	}
}

// reencode encodes sl again with check chk.
func (s *Session) reencode(sl *slot, chk framing.CheckType) error {
	wire, err := s.c.encode(framing.Packet{Seq: sl.seq, Type: sl.typ, Data: sl.data}, chk)
	if err != nil {
		return err
	}
	s.sw.bytes += len(wire) - len(sl.wire)
	sl.wire, sl.chk = wire, chk
	return nil
}

// retransmitLost resends a packet the peer evidently did not get intact
// (NAKed, or overtaken by a later ACK). Only such evidence, not timeouts,
// which also come from lost ACKs and stalls, feeds the length adapter.
func (s *Session) retransmitLost(sl *slot) error {
	sl.damaged++
	if countsForLength(sl.typ) {
		s.adapt.lost()
	}
	s.cfg.Log.Debug("resend", "seq", sl.seq, "len", len(sl.wire), "sends", sl.sends, "next", s.adapt.size())
	return s.transmit(sl)
}

// await processes replies until sl is acknowledged.
func (s *Session) await(ctx context.Context, sl *slot) error {
	for !sl.acked {
		if err := s.pump(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// drain processes replies until every packet is acknowledged.
func (s *Session) drain(ctx context.Context) error {
	for s.sw.count > 0 {
		if err := s.pump(ctx, true); err != nil {
			return err
		}
	}
	return nil
}

// firstUnheard reports whether oldest is a session's first Send-Init
// (or I) on a reliable link from which not a byte has come: sent again
// after 1, 2 and 4 s, as a Kermit on a line would. A C-Kermit that
// accepted the connection and then began RECEIVE flushed it unread, and
// its NAK comes only after its own timeout (QA ae: 8 s in 6 of 8
// sends); having heard nothing, the peer cannot have answered it, so a
// second answer is at worst an ACK of packet 0 that comes late.
func (s *Session) firstUnheard(oldest *slot) bool {
	return s.cfg.Reliable && oldest != nil && oldest.seq == 0 && (oldest.typ == 'S' || oldest.typ == 'I') &&
		oldest.sends < 4 && s.c.rawIn.Load() == 0
}

// pump handles one reply or one timeout.
func (s *Session) pump(ctx context.Context, block bool) error {
	var oldest *slot
	for i, seq := 0, s.sw.lo; i < s.sw.count; i, seq = i+1, (seq+1)%64 {
		sl := s.sw.slots[seq]
		if sl != nil && !sl.acked && (oldest == nil || sl.expect.Before(oldest.expect)) {
			oldest = sl
		}
	}
	wait := time.Duration(0)
	if oldest != nil {
		// The timer runs from the later of the packet's departure and the
		// last ACK that made progress: on a slow line a packet may wait
		// behind a window of others, and ACKs still arriving show the
		// link is alive (TCP restarts its timer on new ACKs likewise).
		from := oldest.expect
		if s.cfg.LineSpeed == 0 && s.lastProgress.After(from) {
			from = s.lastProgress
		}
		// One timer for the whole window: after a timeout it restarts,
		// so the other packets in flight do not all expire at once.
		if s.lastTimeout.After(from) {
			from = s.lastTimeout
		}
		rto := s.rtt.rto
		if s.firstUnheard(oldest) {
			rto = time.Second << (oldest.sends - 1)
		}
		if s.neg.streaming {
			// Streaming is agreed only on a reliable link: an answer
			// late is slow, not lost (a machine or line emulator
			// behind its pace, a receiver storing a file), and G-Kermit
			// takes a packet sent again while streaming as fatal. So
			// the whole timeout, not the adaptive one.
			rto = max(rto, s.cfg.Timeout)
		}
		wait = time.Until(from.Add(rto))
		if wait <= 0 {
			wait = time.Nanosecond
		}
	}
	p, ok, err := s.readWatching(ctx, wait, watchLocal)
	if err != nil {
		return err
	}
	if !ok {
		if oldest == nil {
			return nil
		}
		if s.peerBusy() {
			// The peer is reading a big file for its check: its silence
			// is no loss.
			s.lastTimeout = time.Now()
			return nil
		}
		s.stats.Timeouts++
		silentFrom := oldest.firstExpect
		if s.lastProgress.After(silentFrom) {
			silentFrom = s.lastProgress
		}
		// The adaptive timer sends again sooner than the peer's TIME (a
		// lost packet costs a round trip, not TIME), but a peer is
		// dropped only after as many of its TIMEs of silence as there
		// are retries, as a Kermit timing out on TIME would (QA: one
		// that asked for 5 s was dropped after 3 s in all, --retries 3).
		heardWithin := time.Since(silentFrom) < time.Duration(s.cfg.MaxRetries)*s.neg.timeout
		if s.retries < s.cfg.MaxRetries || !heardWithin {
			if err := s.retry(); err != nil {
				return err
			}
		}
		s.lastTimeout = time.Now()
		if s.cfg.Reliable && !s.firstUnheard(oldest) {
			s.cfg.Log.Debug("no answer yet", "seq", oldest.seq, "type", string(oldest.typ), "waited", s.rtt.rto)
			return nil
		}
		s.rtt.backoff()
		// The lowest packet not ACKed goes again, as C-Kermit's sender
		// sends winlo (notes §1.10): a receiver holds what came after it
		// and waits for it alone. Resending the packet whose timer ran
		// out first went round the rest of the window instead, once that
		// packet was lost again (C-Kermit receiving on a noisy line
		// waited for packet 22 while 23-42 came again and again).
		resend := oldest
		if lo := s.sw.slots[s.sw.lo]; lo != nil && !lo.acked {
			resend = lo
		}
		s.cfg.Log.Debug("timeout", "seq", resend.seq, "type", string(resend.typ), "rto", s.rtt.rto, "srtt", s.rtt.srtt, "rttvar", s.rtt.rttvar, "line", s.lineSpeed())
		resend.unanswered = 0 // the answers to earlier copies are not coming
		resend.stalled = resend.seq == s.sw.lo
		return s.transmit(resend)
	}
	return s.handleReply(p)
}

func (s *Session) handleReply(p inPacket) error {
	stalled := s.stalledCopyLost(p)
	if stalled != nil {
		// A retry; the damage it shows is counted below (p.bad) or by
		// the NAK's own handling.
		if err := s.retry(); err != nil {
			return err
		}
		if err := s.retransmitLost(stalled); err != nil {
			return err
		}
	}
	if p.bad {
		s.damage++
		// Not when the rule above sent it already: two copies out at
		// once bring two answers, the second taken for news of a later
		// packet.
		if lo := s.sw.slots[s.sw.lo]; stalled == nil && !s.cfg.Reliable && s.sw.count == 1 && lo != nil && !lo.acked && (lo.typ == 'S' || lo.typ == 'I') {
			// Most likely the answer to the Send-Init, damaged: the
			// Kermit sender sends it again at once, as on a NAK, and
			// so does this one (waiting out the timeout cost 1-8 s a
			// damaged ACK on a slipping line). Counted as a retry.
			if err := s.retry(); err != nil {
				return err
			}
			return s.retransmitLost(lo)
		}
		return nil
	}
	switch p.Type {
	case 'E':
		msg := s.decodeMessage(p.Data)
		return &PeerError{Msg: msg}
	case 'Y':
		sl := s.sw.inFlight(p.Seq)
		if s.neg.streaming && (sl == nil || sl.acked && sl.typ == 'D') {
			// A streamed D packet's (its place in the window, or past
			// it): its only answer is a cancel (handleStreamingReply).
			s.noteStreamCancel(p.Seq, p.Data)
			return nil
		}
		if s.neg.streaming && s.streamPastAnswers() && (sl.typ == 'A' || sl.typ == 'Z') && len(p.Data) == 1 && (p.Data[0] == 'X' || p.Data[0] == 'Z') {
			// No answer to an A or a Z: a streamed D packet's cancel,
			// come late under a number the window has used since (the
			// Z so answered was taken as stored: review 58). Its own
			// answer comes after.
			s.noteStreamCancel(p.Seq, p.Data)
			return nil
		}
		if sl == nil || sl.acked {
			// Without windows, an ACK for the packet before the one in
			// flight means the peer got a damaged copy of it: a NAK
			// (G-Kermit answers damage so, notes §1.10). Waiting for the
			// timeout instead cost 10-40 s a packet at 9600 baud. Only
			// half a round trip after the packet left, though: a second
			// ACK that comes at once is the peer's answer to a duplicate
			// of the previous packet, and resending on it would send
			// every packet after twice (the sorcerer's apprentice). Nor
			// while copies of the previous packet are still to be
			// answered: on a link of long delay (a 300 ms round trip to
			// G-Kermit) the answer to the copy a timeout sent comes a
			// round trip after the packet in flight left, and taking it
			// for a NAK sent that packet twice, whose second answer did
			// the same to the next, to the end of the file.
			if p.Seq == s.echoSeq && s.echoes > 0 {
				s.echoes--
				return nil
			}
			if lo := s.sw.slots[s.sw.lo]; !s.cfg.Reliable && s.sw.size == 1 && s.sw.count > 0 && lo != nil && !lo.acked &&
				(p.Seq+1)%64 == lo.seq && time.Since(lo.sentAt) >= s.rtt.srtt/2 {
				s.stats.NAKsReceived++
				s.damage++
				return s.retransmitLost(lo)
			}
			return nil // duplicate or stray
		}
		if s.staleInitAck != nil && strings.IndexByte(sl.replies, 'S') >= 0 && bytes.Equal(p.Data, s.staleInitAck) {
			// A late ACK of the I before this command (R, G), which
			// took this sequence number too: not its answer.
			s.cfg.Log.Debug("late ACK of a resent I ignored", "seq", p.Seq)
			return nil
		}
		sl.ackType = 'Y'
		return s.acked(sl, p.Data)
	case 'N':
		s.stats.NAKsReceived++
		s.damage++
		if sl := s.sw.inFlight(p.Seq); sl != nil {
			if sl.acked {
				return nil
			}
			// Resend unless the latest copy left so recently that this NAK
			// must be about an earlier one.
			// Also when the NAK answers the latest copy (nakOfLatest) of
			// a packet a timeout found the window stuck behind, and that
			// copy was the last thing sent: the line idles while it
			// waits. (Elsewhere a copy sent at once may duplicate one
			// still coming, and takes line time from new packets: 10%
			// more packets at BER 1e-4.)
			if latest := s.nakOfLatest(sl); sl.sends == 1 || sl.sendNo <= s.ackedNo || time.Since(sl.sentAt) >= s.rtt.srtt*3/4 || latest && sl.stalled && sl.sendNo == s.sendNo {
				return s.retransmitLost(sl)
			}
			return nil
		}
		if ahead := (p.Seq - s.sw.next + 64) % 64; ahead > 0 && s.sw.size > 1 && s.sw.count > 0 && ahead < s.sw.size-s.sw.count {
			// NAK for a packet within the window but not sent yet: the
			// receiver is waiting for one that has not come, and asks
			// for the next it lacks; resend the lowest not ACKed, as
			// C-Kermit's sender does (notes §1.10).
			if lo := s.sw.slots[s.sw.lo]; lo != nil && !lo.acked && (lo.sendNo <= s.ackedNo || time.Since(lo.sentAt) >= s.rtt.srtt*3/4) {
				return s.retransmitLost(lo)
			}
			return nil
		}
		if p.Seq == s.sw.next && s.sw.count > 0 {
			// NAK for the packet after the last sent: without windows it
			// means the last one arrived; with windows, resend the oldest.
			// Not for a packet whose ACK carries what this side needs (S
			// and I: the peer's parameters; A: its verdict and recovery
			// point; R and G: the answer): taking the NAK for that ACK
			// would go on with defaults the peer does not use, which
			// corrupted files (a lost ACK of S, then every "~" read as a
			// repeat count). Resent, the packet gets its ACK again.
			prev := s.sw.slots[(p.Seq+63)%64]
			if s.sw.size == 1 && prev != nil && !prev.acked {
				if strings.IndexByte("DFZBX", prev.typ) >= 0 {
					return s.acked(prev, nil)
				}
				// Counted as a retry: a peer that answers every copy with
				// this NAK must not keep the exchange going for ever.
				if err := s.retryNAK(); err != nil {
					return err
				}
				return s.retransmitLost(prev)
			}
			if lo := s.sw.slots[s.sw.lo]; lo != nil && !lo.acked && (lo.sendNo <= s.ackedNo || time.Since(lo.sentAt) >= s.rtt.srtt*3/4) {
				return s.transmit(lo)
			}
		}
		return nil
	default:
		if sl := s.sw.inFlight(p.Seq); sl != nil && !sl.acked && strings.IndexByte(sl.replies, p.Type) >= 0 {
			sl.ackType, sl.reply = p.Type, p.Packet
			return s.acked(sl, p.Data)
		}
		if s.restarted(p) {
			return ErrPeerRestarted
		}
		s.cfg.Log.Debug("unexpected packet while sending", "type", string(p.Type), "seq", p.Seq)
		return nil
	}
}

// stalledCopyLost returns the window's lowest packet, which a timeout
// found the window stuck behind, when p says the copy of it just sent
// arrived damaged: that copy is the last thing sent, p is the answer to
// it (nakOfLatest), and it is no ACK: damage (the answer itself
// damaged), or a NAK of another packet, which is how a receiver answers damage once it has
// NAKed the lowest (it asks for gaps not yet asked for first). Sent
// again at once, counted as a retry; left to the timer, each such copy
// waited out a doubled timeout (BER 5e-4: 2 s waits, over and over).
func (s *Session) stalledCopyLost(p inPacket) *slot {
	lo := s.sw.slots[s.sw.lo]
	if s.cfg.Reliable || s.sw.count == 0 || lo == nil || lo.acked || !lo.stalled || lo.sendNo != s.sendNo {
		return nil
	}
	if (p.bad || p.Type == 'N' && p.Seq != lo.seq) && s.nakOfLatest(lo) {
		return lo
	}
	return nil
}

// nakOfLatest counts a NAK (or what stands for one) as the answer to a
// copy of sl, and reports whether it answers the latest: every copy
// before it answered or given up for lost (unanswered). A receiver
// answers each copy once, so this needs no clock; the smoothed round
// trip the other test uses counts the time answers queue behind a
// window of packets, and with the window stuck behind one packet the
// line kept damaging, each copy's NAK came back within it and was taken
// for an earlier copy's: every copy waited out a doubled timeout (BER
// 5e-4: 23 s for 200 KB, 19 s of them such waits).
func (s *Session) nakOfLatest(sl *slot) bool {
	if sl.unanswered == 0 {
		return false // more NAKs than copies: the receiver's own, on its timer
	}
	sl.unanswered--
	return sl.unanswered == 0
}

// restarted reports whether p, come in the middle of a transaction
// where it is no answer, begins a new one: the peer was restarted (a
// C-Kermit killed and run again on a serial line sends its S or I at
// once). It is kept for the next read. Not on a reliable
// link, where a peer cannot start over on the same connection and such
// a packet is a stray of a transaction already ended.
func (s *Session) restarted(p inPacket) bool {
	// A peer starting over sends S or I with sequence number 0 and its
	// parameters: all three asked, so that a damaged packet that passes
	// a type-1 check by chance (one in 64) does not end a transfer.
	if s.cfg.Reliable || p.Seq != 0 || (p.Type != 'S' && p.Type != 'I') {
		return false
	}
	if _, err := framing.ParseParams(p.Data); err != nil {
		return false
	}
	s.cfg.Log.Info("the peer began a new transaction: this one is abandoned", "type", string(p.Type), "seq", p.Seq)
	again := p // a copy: p itself, taken by address, would go to the heap on every call
	s.again = &again
	return true
}

// acked records an acknowledgment, slides the window and resends any
// earlier packet the link has evidently lost: links are FIFO, so an ACK
// for a later transmission means an earlier unACKed one will not come.
func (s *Session) acked(sl *slot, data []byte) error {
	sl.acked = true
	// Copies the peer got whole are answered; the first answer is this
	// one, and a copy it said it got damaged has none.
	s.echoSeq, s.echoes = sl.seq, max(sl.sends-1-sl.damaged, 0)
	sl.ackData = data
	s.retries, s.damage = 0, 0
	s.lastProgress = time.Now()
	if sl.sends == 1 && !sl.sentAt.Before(s.lastResend) {
		// Not a packet that went out while an earlier one was being
		// sent again: a receiver may hold its ACK until the gap before
		// it is filled (C-Kermit at BER 1e-3 answered such a packet 14 s
		// after it left), which is the loss's time, not the path's, and
		// took the timeout to its limit for the rest of the transfer.
		d := max(time.Since(sl.expect), 0)
		s.rtt.sample(d)
		if sl.typ == 'D' && (s.dTurnaround == 0 || d < s.dTurnaround) {
			s.dTurnaround = max(d, time.Nanosecond) // 0 is "none yet"
		}
	}
	s.observeLineSpeed(sl, s.lastProgress)
	s.lineFasterThanModel(sl, s.lastProgress)
	s.lineSlowerThanModel(sl, s.lastProgress)
	if sl.sendNo > s.ackedNo {
		s.ackedNo = sl.sendNo
	}
	if sl.typ == 'D' {
		s.noteCancel(data)
		s.adapt.good()
	}
	if sl.typ == 'Z' || sl.typ == 'B' {
		// A receiver answers a Z or a B once it has taken it, in order,
		// so after every packet before it: the data packets before it
		// whose ACKs the line lost arrived. Waiting for those ACKs after
		// the B's had come, the sender resent a data packet to a
		// receiver that had stored the file and gone, and failed after
		// its retries (QA: lineem, BER 1e-3, 7 of 20 runs). (Not F or A,
		// whose ACKs carry what the sender needs.)
		for i, seq := 0, s.sw.lo; i < s.sw.count && seq != sl.seq; i, seq = i+1, (seq+1)%64 {
			if o := s.sw.slots[seq]; o != nil && !o.acked && o.typ == 'D' {
				o.acked = true
			}
		}
	}
	// An ACK for a retransmitted packet is ambiguous (which copy?), so
	// only a packet sent once can prove that earlier ones were lost.
	for i, seq := 0, s.sw.lo; sl.sends == 1 && i < s.sw.count; i, seq = i+1, (seq+1)%64 {
		o := s.sw.slots[seq]
		if o != nil && !o.acked && o.sendNo < sl.sendNo {
			if err := s.retransmitLost(o); err != nil {
				return err
			}
		}
	}
	slid, err := s.slide()
	if err != nil {
		return err
	}
	if slid && s.cfg.LineSpeed > 0 {
		// On a serial line a timeout means damage, not congestion, and
		// the window moving shows the peer is there and keeping pace:
		// the timer backed off by earlier timeouts comes back at once.
		// Karn's rule would keep it until a packet sent once is ACKed,
		// but on a noisy line the window stays stuck behind a packet
		// lost twice, so no such ACK comes, and every further loss cost
		// the whole timeout (QA: kerf to C-Kermit at BER 1e-3, 5 s a
		// packet, 15 KB in 300 s).
		s.rtt.restore()
	}
	return nil
}

// slide moves the window past the ACKed packets at its low end, running
// their onAck, and reports whether it moved.
func (s *Session) slide() (bool, error) {
	slid := false
	for s.sw.count > 0 {
		lo := s.sw.slots[s.sw.lo]
		if lo == nil || !lo.acked {
			break
		}
		slid = true
		s.sw.slots[s.sw.lo] = nil
		s.sw.lo = (s.sw.lo + 1) % 64
		s.sw.count--
		s.sw.bytes -= len(lo.wire)
		if lo.onAck != nil {
			if err := lo.onAck(lo.ackData); err != nil {
				return slid, err
			}
		}
	}
	return slid, nil
}

// --- receiver side -----------------------------------------------------

// recvWindow holds packets received ahead of the next one to deliver.
type recvWindow struct {
	lo      int // next sequence number to deliver
	size    int
	started bool
	// got holds the packets received ahead, where has says so: values,
	// not pointers, so that a packet stashed costs no allocation.
	got    [64]framing.Packet
	has    [64]bool
	naked  [64]bool
	acks   [64][]byte
	rawAck [64]bool // acks[i] is a whole encoded packet (the S ACK, check type 1)
	hasAck [64]bool
	// fileIDs are got's inPacket.fileID; deliveredID is that of the
	// packet nextPacket returned last.
	fileIDs     [64]uint32
	deliveredID uint32
	// ackedAt is when seq was last ACKed, repeatedAt when its ACK was
	// last sent again for a copy (zero: not since its first), and
	// longest the longest packet received (wire bytes): a stop-and-wait
	// receiver leaves unanswered the copies its own second answers bring
	// (tooSoon).
	ackedAt, repeatedAt [64]time.Time
	longest             int
	// nakedAt is when seq was last NAKed (sameDamage).
	nakedAt [64]time.Time
}

func (w *recvWindow) reset(size, lo int) {
	*w = recvWindow{size: clamp(size, 1, 31), lo: lo}
}

// ackRecv sends (and remembers, for duplicates) the ACK for seq.
func (s *Session) ackRecv(seq int, data []byte) error {
	s.rw.acks[seq] = data
	s.rw.hasAck[seq] = true
	s.rw.rawAck[seq] = false
	s.rw.ackedAt[seq] = time.Now()
	s.rw.repeatedAt[seq] = time.Time{}
	return s.c.send(seq, 'Y', data)
}

// repeatAck sends again the ACK this side gave packet seq (its ACK was
// lost: the packet came again).
func (s *Session) repeatAck(seq int) error {
	s.rw.ackedAt[seq] = time.Now()
	s.rw.repeatedAt[seq] = s.rw.ackedAt[seq]
	if s.rw.rawAck[seq] {
		return s.c.writeRaw(s.rw.acks[seq])
	}
	return s.c.send(seq, 'Y', s.rw.acks[seq])
}

// tooSoon reports whether a copy of a stop-and-wait sender's packet
// seq, which came wireN bytes long, was sent for this side's own second
// answer to the packet before it, and is not answered: a sender that
// takes the ACK of its previous packet for a NAK (G-Kermit) sends the
// next packet again when that ACK comes twice, and answering both copies
// has it send every packet twice from then on, each copy answered again:
// the sorcerer's apprentice of stop-and-wait protocols (RFC 1123
// 4.2.3.1, for TFTP). So a copy of seq that comes right behind seq's
// ACK, while the previous packet's ACK was just sent a second time, is
// left unanswered. Any other copy is answered, quick or not: G-Kermit
// sends a packet again at once when its ACK came damaged. One whose
// answer this leaves out wrongly is sent again by the sender's timer,
// and answered then. Only on a line of known speed, where the time a
// copy takes to come is known.
func (s *Session) tooSoon(seq, wireN int) bool {
	w := &s.rw
	prev := (seq + 63) % 64
	if w.size != 1 || s.cfg.Reliable || s.cfg.LineSpeed <= 0 || w.ackedAt[seq].IsZero() || w.repeatedAt[prev].IsZero() {
		return false
	}
	within := min(2*lineTime(max(wireN, w.longest), s.lineSpeed())+quickCopySlack, s.cfg.Timeout/2)
	return time.Since(w.ackedAt[seq]) < within && time.Since(w.repeatedAt[prev]) < 2*within
}

// sameDamage reports whether in, a damaged packet that came to a
// stop-and-wait receiver, is more of the one it has just NAKed: a burst
// of noise that holds packet marks parses as several damaged packets,
// and a NAK for each had the sender send the packet as many times again,
// each counted as a retry (G-Kermit gave up with "Too many retries"
// under bursts, QA, where C-Kermit as the receiver, which reads a
// damaged packet to its end of line, NAKs it once). Such a mark comes
// after damage with no end of line before it (inDamage), and, on a line
// of known speed, within the longest packet's line time of the NAK: the
// copy the NAK asks for comes only after the rest of the damaged packet.
// A damaged copy begins after an end of line, and is NAKed again
// (suppressed on time alone, it waited out the receiver's timeout).
func (s *Session) sameDamage(in inPacket) bool {
	w := &s.rw
	if !in.inDamage || w.size != 1 || !w.started || s.cfg.Reliable || !w.naked[w.lo] {
		return false
	}
	if s.cfg.LineSpeed <= 0 {
		return true
	}
	return time.Since(w.nakedAt[w.lo]) < lineTime(w.longest, s.lineSpeed())+quickCopySlack
}

// quickCopySlack is what tooSoon allows beyond a copy's line time: the
// turn of the line at both ends.
const quickCopySlack = 250 * time.Millisecond

func (s *Session) nak(seq int) error {
	s.stats.NAKsSent++
	s.rw.naked[seq] = true
	s.rw.nakedAt[seq] = time.Now()
	s.cfg.Log.Debug("NAK", "seq", seq, "lo", s.rw.lo)
	return s.c.send(seq, 'N', nil)
}

// retry counts one more try without progress (a timeout, or a NAK that
// makes a packet go again), failing past MaxRetries with words for what
// the tries met: only silence (the peer stopped, or never heard this
// side), or damage too.
func (s *Session) retry() error {
	if s.retries++; s.retries > s.cfg.MaxRetries {
		said := ""
		if s.weakE != "" {
			// An E the line may have made, never repeated: told, as
			// what the peer may have said.
			said = fmt.Sprintf("; the peer may have said %q, in a packet whose check could not be trusted", s.weakE)
		}
		if s.damage == 0 && !s.answered {
			return fmt.Errorf("%w (%d timeouts in a row: %w: nothing on the line, or a peer that wants another speed, parity or start-of-packet%s)", ErrTooManyRetries, s.retries, ErrNoAnswer, said)
		}
		if s.damage == 0 {
			return fmt.Errorf("%w (%d timeouts in a row: the peer stopped answering%s)", ErrTooManyRetries, s.retries, said)
		}
		return fmt.Errorf("%w (%d timeouts or NAKs in a row: the line damages too many packets, or the two ends differ in speed or parity%s)", ErrTooManyRetries, s.retries, said)
	}
	return nil
}

// retryNAK is retry for a try a NAK caused.
func (s *Session) retryNAK() error {
	s.damage++
	return s.retry()
}

// packetArriving reports whether, on a serial line, bytes came since it
// was last asked that are no packet yet, and no more than one packet's
// worth: a long packet still crossing a line slower than the timer
// allows for (one slower than its stated speed: QA, 9 KB packets at
// 9600 bps take 9 s, and were NAKed while they came). More than a
// packet's worth without one is noise, and times out as silence does.
func (s *Session) packetArriving() bool {
	if s.cfg.Reliable {
		return false
	}
	n := s.c.rawIn.Load()
	moved := n != s.lastRaw
	s.lastRaw = n
	pending := n - s.c.rawAtPacket.Load()
	return moved && pending > 0 && pending <= int64(framing.MaxLongLen+64)
}

// dataMoved reports whether the data path moved file data since it was
// last asked (DataProgress).
func (s *Session) dataMoved() bool {
	dp, ok := s.data.(DataProgress)
	if !ok || !s.dualActive() {
		return false
	}
	n := dp.Progress()
	moved := n != s.lastDataProgress
	s.lastDataProgress = n
	return moved
}

// nextPacket returns the next packet in sequence, acknowledging data
// packets on arrival, re-acknowledging duplicates and NAKing gaps. The
// caller ACKs every non-D packet it gets (ackRecv) once it has acted on
// it. timeout 0 waits forever (server command wait).
func (s *Session) nextPacket(ctx context.Context, timeout time.Duration) (framing.Packet, error) {
	w := &s.rw
	for {
		if w.started {
			if w.has[w.lo] {
				p := w.got[w.lo]
				w.deliveredID = w.fileIDs[w.lo]
				w.got[w.lo], w.has[w.lo] = framing.Packet{}, false
				w.naked[w.lo] = false
				w.lo = (w.lo + 1) % 64
				return p, nil
			}
		}
		in, ok, err := s.readWatching(ctx, timeout, watchAll)
		if err != nil {
			return framing.Packet{}, err
		}
		if !ok && s.peerBusy() {
			continue // the peer is reading a big file for its check
		}
		if !ok && s.dataMoved() {
			continue // a file's data still arriving: not silence
		}
		if !ok && s.packetArriving() {
			continue // a long packet still crossing a slow line
		}
		if !ok {
			s.stats.Timeouts++
			if err := s.retry(); err != nil {
				return framing.Packet{}, err
			}
			if s.neg.streaming {
				return framing.Packet{}, fmt.Errorf("%w: %w", ErrProtocol, errStreamingSilence)
			}
			if w.started && !s.cfg.Reliable {
				if err := s.nak(w.lo); err != nil {
					return framing.Packet{}, err
				}
			}
			continue
		}
		if in.bad {
			s.damage++
			s.cfg.Log.Debug("damaged packet", "wire", in.wireN)
			if s.neg.streaming {
				return framing.Packet{}, fmt.Errorf("%w: transmission error on a reliable link", ErrProtocol)
			}
			if s.inCommandWait {
				// A new command, damaged: the last one's answer is past,
				// and a NAK now is for this one's (review 56b: the
				// last answer was said again to a NAK of a lost CD).
				s.lastAnswer = s.lastAnswer[:0]
			}
			if !w.started && (s.awaitingS || s.inCommandWait) && !s.cfg.Reliable {
				// Most likely the S, damaged: a NAK of 0 has it sent
				// again at once, as the Kermit receiver does in its
				// receive-init state, not after the sender's timeout
				// (doubled each time on a link of no known speed). In
				// a server's command wait, the command (QA an: C-Kermit
				// answers a lost command's silence with NAKs, never
				// sending it again unasked).
				if err := s.nak(0); err != nil {
					return framing.Packet{}, err
				}
				continue
			}
			if s.sameDamage(in) {
				s.cfg.Log.Debug("damaged packet: more of the one just NAKed", "seq", w.lo)
				continue
			}
			if err := s.nakMissing(-1); err != nil {
				return framing.Packet{}, err
			}
			continue
		}
		s.retries, s.damage = 0, 0
		w.longest = max(w.longest, in.wireN)
		if in.Type == 'E' {
			msg := s.decodeMessage(in.Data)
			return framing.Packet{}, &PeerError{Msg: msg}
		}
		fresh := !w.started
		if fresh {
			w.started = true
			w.lo = in.Seq
		}
		d := (in.Seq - w.lo + 64) % 64
		prevWindow := d >= w.size && (d >= 64-w.size || (w.size == 1 && d == 63))
		// An S or I in the middle of the transaction, unless it is the
		// one that began it sent again (its ACK, kept raw, was lost).
		if !fresh && !(prevWindow && w.rawAck[in.Seq]) && s.restarted(in) {
			return framing.Packet{}, ErrPeerRestarted
		}
		switch {
		case d < w.size:
			if w.has[in.Seq] {
				s.copyOf(in)
				continue // duplicate of a stashed packet
			}
			w.got[in.Seq], w.has[in.Seq] = in.Packet, true
			w.fileIDs[in.Seq] = 0
			if in.fileID != 0 {
				w.fileIDs[in.Seq] = in.fileID - s.fxCopies
			}
			w.naked[in.Seq] = false
			// Not answered yet: an ACK kept for this number is of the
			// packet 64 before it.
			w.hasAck[in.Seq] = false
			if in.Type == 'D' && !s.neg.streaming && s.receiving {
				// (Outside a transfer a D is a stray, which the engine
				// answers, if at all, with an E: not confirmed here, QA.)
				if err := s.ackData(in.Seq); err != nil {
					return framing.Packet{}, err
				}
			}
			if d > 0 {
				if err := s.nakMissing(in.Seq); err != nil {
					return framing.Packet{}, err
				}
			}
		case prevWindow:
			// From the previous window: our ACK was lost; repeat it
			// (unless the copy was sent for something else: tooSoon).
			s.copyOf(in)
			if w.hasAck[in.Seq] {
				if s.tooSoon(in.Seq, in.wireN) {
					s.cfg.Log.Debug("a copy right behind its ACK: not answered again", "seq", in.Seq)
					continue
				}
				if err := s.repeatAck(in.Seq); err != nil {
					return framing.Packet{}, err
				}
			}
		default:
			s.copyOf(in)
			s.cfg.Log.Debug("packet outside window ignored", "seq", in.Seq, "lo", w.lo)
		}
	}
}

// copyOf notes a packet the receive window drops as a copy of one it has
// (or one outside it): an F or X so dropped took a file id in the
// reader's count that its first copy has (fxCopies).
func (s *Session) copyOf(in inPacket) {
	if in.fileID != 0 {
		s.fxCopies++
	}
}

// ackData acknowledges a data packet, carrying a cancel request if any.
func (s *Session) ackData(seq int) error {
	var data []byte
	switch {
	case s.cancelGroup.Load():
		data = []byte{'Z'}
	case s.cancelFile.Load():
		data = []byte{'X'}
	}
	return s.ackRecv(seq, data)
}

// nakMissing NAKs missing packets. With upto >= 0 (a packet arrived
// ahead of the ones before it) every not-yet-NAKed gap before upto is
// NAKed. With upto < 0 (a damaged packet arrived) one packet is NAKed:
// the oldest missing one up to the next new one, preferring one not yet
// NAKed, since on a FIFO link the damaged packet is the next missing one.
func (s *Session) nakMissing(upto int) error {
	w := &s.rw
	if !w.started {
		return nil
	}
	if upto >= 0 {
		limit := (upto - w.lo + 64) % 64
		for i := 0; i < limit; i++ {
			seq := (w.lo + i) % 64
			if !w.has[seq] && !w.naked[seq] {
				if err := s.nak(seq); err != nil {
					return err
				}
			}
		}
		return nil
	}
	hi := -1
	for j := 0; j < w.size; j++ {
		if w.has[(w.lo+j)%64] {
			hi = j
		}
	}
	first := -1
	for i := 0; i <= hi+1 && i < w.size; i++ {
		seq := (w.lo + i) % 64
		if w.has[seq] {
			continue
		}
		if !w.naked[seq] {
			return s.nak(seq)
		}
		if first < 0 {
			first = seq
		}
	}
	if first >= 0 {
		return s.nak(first)
	}
	return nil
}
