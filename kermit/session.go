package kermit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"kerf/framing"
)

// Errors callers may branch on.
var (
	ErrPeerError      = errors.New("kermit: peer reported an error")
	ErrTooManyRetries = errors.New("kermit: too many retries without progress")
	// ErrNoAnswer matches (with ErrTooManyRetries) the retries of a
	// session that never had a good packet from its peer: nobody there,
	// or one at another speed or parity (kerf exits 3 for it, as for a
	// server that cannot be reached; QA ak).
	ErrNoAnswer = errors.New("kermit: no answer from the peer")
	ErrCanceled = errors.New("kermit: transfer canceled")
	ErrProtocol = errors.New("kermit: protocol error")
	// ErrPeerRestarted: in the middle of a transaction the peer began a
	// new one (an S or I: it was killed and run again, on a serial
	// line). This one is abandoned without an E, which the peer
	// would take for the answer to its new packet; that packet is read
	// again as the first of the next transaction.
	ErrPeerRestarted = errors.New("kermit: the peer began a new transaction in the middle of this one (restarted?); this one is abandoned")
)

// PeerError is an E packet received from the peer.
type PeerError struct{ Msg string }

func (e *PeerError) Error() string { return "kermit: peer error: " + e.Msg }
func (e *PeerError) Unwrap() error { return ErrPeerError }

// Session is one Kermit conversation over a byte stream. A Session is
// used by one goroutine at a time; CancelFile and CancelGroup may be
// called from any goroutine.
type Session struct {
	cfg Config
	c   *pktConn
	neg negotiated
	// again is a packet read and handed back (ErrPeerRestarted): the
	// next read returns it.
	again *inPacket
	// abandoned: files told failed when their sender restarted, or
	// thrown away for their whole-file CRC (capas3FileCRC), whose later
	// FileDone (a RESEND, the file sent again) is Again.
	abandoned map[string]bool
	// weakE is the message of an E that passed only the 6-bit check,
	// taken as damage until a second comes with no good packet between
	// (got); "" if none is pending.
	weakE string
	// answered: a good packet came from the peer, ever (ErrNoAnswer).
	answered bool
	// weakInits counts a transaction's first packets that passed only
	// the 6-bit check while this side forces type 3, with no good packet
	// between (got): a peer that does not force it.
	weakInits int
	// fxCopies counts the F and X packets the receive window dropped as
	// copies (a resend): the reader counted each, and the file ids of
	// those after are that many lower (countFileID).
	fxCopies uint32
	// weakNAKs counts the type-1 NAKs of this side's type-3 Send-Init
	// (block check 5), each alone on the line (got).
	weakNAKs int
	// nakedLo is the number of the packet the peer's last packet
	// NAKed, plus one; 0 when its last packet was no NAK (errorSeq).
	nakedLo int
	// crcResends: how many times the file being sent has gone again
	// after failing its whole-file CRC at the receiver (maxCRCResends).
	crcResends int
	// ended says a group was received to its B (AnswerLateRepeats).
	ended bool
	// awaitingS: a receive waits for the S that starts its group; a
	// damaged packet then is most likely that S, and is NAKed (nextPacket).
	awaitingS bool
	// inCommandWait: a server reads its client's next command (a
	// damaged packet is most likely that command: NAKed at once).
	inCommandWait bool
	// receiving: this side answered the S of the transaction under
	// way, so its E answers the sender's packets (errorPacket).
	receiving bool
	// textReply: the command under way is answered with text (a
	// listing, a REMOTE command's words), which comes in-band: its I
	// (sendInit) and the ACK of the S that opens the text (answerInit)
	// leave the dual-channel bit out (forText).
	textReply bool
	// initRefusal is the E a server answered the last I exchange with
	// (nil: none), for the command that follows.
	initRefusal *PeerError
	// unnameable: files of the group being sent whose names did not fit
	// a packet, told to a kerf receiver in the B (unnameableReport).
	unnameable []string
	// linkErr is the end of the link, once the reader has delivered it.
	linkErr error
	// successor: the session was dialled to follow a lost one
	// (Reconnect).
	successor bool
	// lastDataProgress is the data path's Progress when nextPacket last
	// timed out (dataMoved).
	lastDataProgress int64

	// sender state
	sw    sendWindow
	rtt   rttEstimator
	adapt lengthAdapter
	// dTurnaround is the least round trip of a D packet sent once, from
	// the end of its line time to its ACK (turnaroundBytes).
	dTurnaround time.Duration
	retries     int
	damage      int // NAKs and damaged packets since the last progress: not silence
	sendFileID  uint32
	decodeBuf   []byte
	// groupFailed names files refused after their data was already sent
	// (pipelined dual-channel mode), learned from late A replies.
	groupFailed []string
	// batching: the store of the group being received defers its
	// renames to the group's end; unsaved are the FileDone events of
	// the files it holds so (FileSaved follows at the end).
	batching bool
	unsaved  []Event
	// dirsToFinish are the group's received directories, for finishDirs.
	dirsToFinish []dirAttrs
	// share is the part of its next GET a kerf client asked this server
	// for (REMOTE SET kerf-share; n 0: all of it).
	share share
	// exclude are the patterns of files a kerf client asked this server
	// to leave out of its next GET (REMOTE SET kerf-exclude).
	exclude Exclusions
	// removeSent: the client asked this server to remove the files of
	// its next GET once it has them saved (REMOTE SET
	// kerf-remove-source-files).
	removeSent bool
	// keptSources are the files the last GET with removeSent could not
	// remove, "path<TAB>why" each, for the client to ask for (REMOTE
	// SET kerf-kept-sources); keptMore counts those past the bound.
	keptMu      sync.Mutex // (told by the events of whichever goroutine)
	keptSources []string
	keptMore    int
	// literalNext: the client asked that the name of its next REMOTE
	// DELETE or DIRECTORY be taken as it is, never as a pattern (REMOTE
	// SET kerf-literal).
	literalNext bool
	// lastAnswer is the wire form of this server's one-packet answer to
	// the command it last served (an ACK with its text, an E) and its
	// number, said again to a client's NAK of that number in command
	// wait: a classic client whose answer came damaged NAKs it for
	// ever (QA an: C-Kermit's REMOTE DIRECTORY hung on a noisy line).
	lastAnswer    []byte
	lastAnswerSeq int
	// lastRaw is the link's byte count when packetArriving last looked.
	lastRaw int64
	// skip holds the files of its next GET a kerf client has whole
	// (its kerf-skip text), by name as the F packet gives it;
	// skipPending those of a text not yet ended (skipSink).
	skip, skipPending *skipSet
	skipKey           maphash.Seed
	skipSeeded        bool
	skipAccountless   bool // its skip sets' (skipSet.accountless)
	// serving: the session runs Serve; command is the one it serves
	// now (the packet type, "G" and the letter for a generic one), for
	// its log.
	serving bool
	command string
	// peerWasKerf: the last exchange of parameters was with a kerf peer.
	peerWasKerf bool
	// sawSendInit, resendAgreed: an S was exchanged, and the last one
	// agreed to RESEND (ResumeUnavailable).
	sawSendInit, resendAgreed bool
	// peerClassic: an exchange of parameters has shown the peer is a
	// classic Kermit, which is sent its E messages plain (none yet, or
	// a kerf: encoded, as every packet).
	peerClassic bool
	// holdDirs, if set, takes the directory attributes finishDirs would
	// give: a GetParallel gives them once all its sessions are done.
	holdDirs *heldDirs
	// dataFailureSeen: the data path's failure was reported (readWatching).
	dataFailureSeen bool
	// dataLostHeard, once the data path is lost to its connections, is
	// when the peer was last heard: each side may wait on the other to
	// say more (dataLossGrace).
	dataLostHeard time.Time
	// peerHashingAck: the packet whose ACK ends peerHashingUntil, -1 for
	// any packet (peerHashes).
	peerHashingAck int
	// For Busy: local work in progress (working), and when (unix
	// nanoseconds) the peer should be done with its own check.
	localWork atomic.Int32
	// waiting counts this side's waits on the peer under way: for a
	// packet, for the data path to take or bring a file (Waiting).
	waiting          atomic.Int32
	peerHashingUntil atomic.Int64
	// awaitingZ holds the readers of files sent whose Z has not been
	// acknowledged (awaitZ), by file id.
	awaitingZ map[uint32]io.Closer
	// peerHashingData: the data path's progress when the peer began its
	// check (nil without a data path); its data moving again ends it.
	peerHashingData atomic.Pointer[progressMark]
	// sending names the files of the group being sent that have begun
	// (FileStart) and not ended; lastZQueued says the last of them has
	// had its Z (not a discarding one) queued: if the transfer stops
	// before its ACK, the receiver may have stored it.
	sending     []sentFile
	openedOf    string // the file whose F the receiver answered last
	lastZQueued bool
	// staleInitAck is the ACK data of an I that went more than once: a
	// late copy of it is no answer to the command after (handleReply).
	staleInitAck []byte
	// peerRept is the repeat prefix a classic peer last proposed in its
	// own S or I (0: none seen): this side's later Send-Inits propose it
	// too, as the peer's ACK adopts whatever is proposed but its encoder
	// may keep its own (QA ae: C-Kermit with SET REPEAT PREFIX 96, having
	// ACKed '~', sent bare '~' as data).
	peerRept byte
	// unsavedSent are the FileDone events of the group being sent to a
	// kerf receiver, which saves files under their names only at the
	// group's end (or in batches before it): FileSaved once its B is
	// acknowledged, FileFailed (ErrNotSaved) if the group fails first.
	unsavedSent  []sentFile
	nonames      int // files received without a name (stored as NONAME...)
	recvFileID   uint32
	sendNo       uint64
	ackedNo      uint64 // highest sendNo known to have reached the peer
	lastProgress time.Time
	lastTimeout  time.Time // when the retransmission timer last fired
	lastResend   time.Time // when a packet was last sent again
	// echoes counts the ACKs still to come for copies of the last packet
	// ACKed (its sends less the one ACK taken and those the peer said it
	// got damaged), by sequence number: in
	// stop-and-wait, a peer answers every copy it gets, and an ACK of the
	// packet before the one in flight is an echo of such a copy, not a
	// NAK, until these are used up.
	echoSeq, echoes int
	linkFree        time.Time // when the line will have sent all we wrote (LineSpeed known)
	// lineSeen is the line's speed as its ACKs show it, in bits per
	// second, when slower than LineSpeed (0: not seen yet); lastDAck is
	// when the last D packet sent once was acknowledged
	// (observeLineSpeed).
	lineSeen     int
	lastDAck     time.Time
	lastDAckRetx int64 // stats.Retransmissions then

	// receiver state
	rw recvWindow

	data DataPath // open dual-channel data path, if any

	cancelFile  atomic.Bool
	cancelGroup atomic.Bool
	// streamedFor is the file id each streamed D packet was of, by its
	// number, and pipelinedFile says the file being sent did not wait
	// for its A's answer: a receiver's cancel of a streamed packet
	// (noteStreamCancel) may then be an earlier file's (review 58).
	streamedFor   [64]uint32
	pipelinedFile bool

	stats Stats
}

// Stats counts what a session did, for tests and benchmarks.
type Stats struct {
	PacketsSent     int64
	Retransmissions int64
	NAKsSent        int64
	NAKsReceived    int64
	Timeouts        int64
	BadPackets      int64
	// FileBytes is the file data moved over the link, either way,
	// including files canceled part-way; a resumed file's bytes
	// already at the receiver are not counted. Tests use it to see
	// what went on the wire.
	FileBytes int64
	// Files and their bytes (of this session) by direction, as the
	// events told them: FileDone, FileFailed. Only files completed
	// count towards BytesSent and BytesReceived.
	FilesSent, FilesReceived, FilesFailed int64
	BytesSent, BytesReceived              int64
}

// NewSession starts a session over rw. Close stops its reader.
func NewSession(rw io.ReadWriter, cfg Config) *Session {
	if cfg.Log == nil {
		cfg.Log = DefaultConfig().Log
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MinTimeout <= 0 {
		cfg.MinTimeout = 100 * time.Millisecond
	}
	if cfg.Window < 1 {
		cfg.Window = 1
	}
	if cfg.MaxPacket < 0 {
		cfg.MaxPacket = 0
	}
	if (cfg.Check < 1 || cfg.Check > 3) && cfg.Check != CheckForce3 {
		cfg.Check = 3
	}
	switch m := cfg.Mark; {
	case m == 0:
		cfg.Mark = framing.SOH
	case m >= ' ' && m != 0x7f || m == '\r':
		// Framing needs a control character other than the EOL.
		cfg.Log.Warn("packet mark not a control character other than CR: SOH used", "mark", int(m))
		cfg.Mark = framing.SOH
	}
	s := &Session{cfg: cfg, c: newPktConn(rw, cfg.Parity, cfg.Mark, cfg.CtrlCQuits)}
	if cfg.DetectParity && !cfg.Parity {
		s.c.detectParity.Store(true)
	}
	// On a line of known speed every packet leaves at once (its timers
	// model the line); elsewhere packets are gathered until a wait.
	s.c.buffered = cfg.LineSpeed == 0
	s.rtt.init(cfg.Timeout)
	s.rtt.min = cfg.MinTimeout
	if cfg.LineSpeed > 0 {
		// What a sender waits for is an ACK, a short packet: its own
		// packets' time on the line is counted from when the line has
		// sent them (slot.expect). So the floor is a short packet's time
		// on the line each way, not a longest packet's (which made the
		// first timeout of a Send-Init 75 s at 1200 bps, whatever
		// --timeout said, and a vanished peer took 12 minutes to give
		// up on at 9600).
		s.rtt.min = max(s.rtt.min, 2*lineTime(framing.MaxShortLen+16, cfg.LineSpeed))
		// A serial line is nobody else's: a timeout there means damage,
		// not congestion, so exponential backoff would only idle the
		// line; it backs off no further than the timeout asked for.
		s.rtt.max = max(4*s.rtt.min, 2*time.Second, cfg.Timeout)
	}
	s.resetNegotiation()
	return s
}

// Close stops the session's reader goroutine. It does not close rw.
func (s *Session) Close() { s.c.stop() }

// Busy reports whether a silence on the link is work, not a peer gone:
// this side is reading a partial file for its check, or the peer was
// asked to (recovery: the receiver checks what it kept, the sender the
// same prefix of its file), which for a big file takes minutes without a
// byte on the link. An idle watchdog counts such a time as activity.
func (s *Session) Busy() bool {
	return s.localWork.Load() > 0 || s.peerBusy()
}

// Waiting reports whether the session waits on its peer: for a packet,
// or for the data path to take or bring a file. Between commands, and
// while other work goes on, it does not, and a silence is no sign of a
// peer gone (control.Client's idle watchdog arms only while it waits).
func (s *Session) Waiting() bool { return s.waiting.Load() > 0 }

// waitingOnPeer counts a wait on the peer until the returned func runs.
func (s *Session) waitingOnPeer() func() {
	s.waiting.Add(1)
	return func() { s.waiting.Add(-1) }
}

// peerBusy reports whether the peer is reading a file for its check, so
// that its silence is neither a timeout nor a loss. Only on a reliable
// link: on a line that loses packets, the packet it would answer may be
// lost, and waiting minutes before sending it again is worse. A peer
// whose check ends in data on the data path (a resumed send) sends no
// packet until the file's Z: data moving since ends the check too, or a
// resumed file cut off later would count as busy for minutes (the idle
// watchdog and a take-over would wait for nothing).
func (s *Session) peerBusy() bool {
	if !s.cfg.Reliable || time.Now().UnixNano() >= s.peerHashingUntil.Load() {
		return false
	}
	m := s.peerHashingData.Load()
	return m == nil || m.dp.Progress() == m.at
}

// progressMark is a data path's progress at one moment.
type progressMark struct {
	dp DataProgress
	at int64
}

// minHashRate is the slowest a peer is expected to read a file for its
// check (a slow disk), for Busy.
const minHashRate = 50 << 20 // bytes per second

// peerHashes notes that the peer now reads n bytes of a file for its
// check before it answers: before its next packet, or with ackOf >= 0,
// before its ACK of packet ackOf (ACKs of packets sent earlier may come
// meanwhile).
func (s *Session) peerHashes(n int64, ackOf int) {
	until := time.Now().Add(time.Minute + time.Duration(n/minHashRate)*time.Second)
	var mark *progressMark
	if dp, ok := s.data.(DataProgress); ok {
		mark = &progressMark{dp, dp.Progress()}
	}
	s.peerHashingData.Store(mark)
	s.peerHashingUntil.Store(until.UnixNano())
	s.peerHashingAck = ackOf
}

// working runs f, local work that may take long with nothing on the
// link (a read of a file for its check, a commit's or a group's fsyncs
// on a slow disk), as Busy.
func (s *Session) working(f func()) {
	s.localWork.Add(1)
	defer s.localWork.Add(-1)
	f()
}

// Stats returns the counters so far.
func (s *Session) Stats() Stats { return s.stats }

// RoundTrip is the least round trip measured on the link so far (0
// before any): the path's own, without the peer's work. Like Stats, read
// it while no transfer runs.
func (s *Session) RoundTrip() time.Duration { return s.rtt.least }

// NoteRoundTrip takes d, a round trip of the session's path measured
// outside it (its TLS client's first flight), for RoundTrip when it is
// the least seen: a client whose login needs no I exchange has no other
// before its first transfer, and the login's answer waits for the
// server's password hash, tens of milliseconds. Only the least: the
// retransmission timer is left to the session's own exchanges.
func (s *Session) NoteRoundTrip(d time.Duration) {
	if d > 0 && (s.rtt.least == 0 || d < s.rtt.least) {
		s.rtt.least = d
	}
}

// DataPath returns the dual-channel data path, or nil in classic mode.
func (s *Session) DataPath() DataPath { return s.data }

// errOpeningData is why a session failed to connect its data path (the
// server's data port refused or silent: a firewall, a wrong
// --data-listen), which another login would meet again (lostBy).
var errOpeningData = errors.New("kermit: opening the data channel")

// openDual connects the data path once both sides agreed to it.
func (s *Session) openDual(ctx context.Context) error {
	if !s.neg.dual || s.data != nil || s.cfg.Dual == nil {
		return nil
	}
	// The peer needs our Send-Init (or its ACK) before it can connect.
	if err := s.flush(); err != nil {
		return err
	}
	d, err := s.cfg.Dual.Open(ctx, s.neg.peer.Ext)
	if err != nil {
		return fmt.Errorf("%w: %w", errOpeningData, err)
	}
	s.data = d
	if d != nil {
		s.c.beforeFlush = d.Flush
		go s.closeDataOnLinkLoss(d)
	}
	return nil
}

// closeDataOnLinkLoss closes the data path when the control link ends.
// A data path does not always notice by itself that the peer is gone:
// QUIC streams outlive a killed peer until their idle timeout, and so
// does a TCP connection whose path silently dropped it, and a SendFile
// blocked on such a connection would keep the engine from ever reading
// the link's end. Without the link nothing more can be confirmed, so
// the data path has nothing left to do.
func (s *Session) closeDataOnLinkLoss(d DataPath) {
	select {
	case <-s.c.lost:
		d.Close()
	case <-s.c.done:
	}
}

// dualActive reports whether file data goes through the data path.
func (s *Session) dualActive() bool { return s.neg.dual && s.data != nil }

// ResumeUnavailable reports whether this side was to resume (Resume)
// and the last exchange of parameters found a peer that cannot: no
// RESEND, or no attributes. Files then go whole.
func (s *Session) ResumeUnavailable() bool {
	return s.cfg.Resume && s.sawSendInit && !s.resendAgreed
}

// PeerIsKerf reports whether the last exchange of parameters (an S or an
// I) was with a kerf peer rather than a classic Kermit.
func (s *Session) PeerIsKerf() bool { return s.peerWasKerf }

// SetEvents sets the progress callback.
func (s *Session) SetEvents(f func(Event)) { s.cfg.Events = f }

// BytesHeard counts the bytes read from the link so far; safe to call
// while the session runs (a watchdog's sign that the peer speaks).
func (s *Session) BytesHeard() int64 { return s.c.rawIn.Load() }

// SetKeepServing sets Config.KeepServing.
func (s *Session) SetKeepServing(on bool) { s.cfg.KeepServing = on }

// CancelFile asks to stop the current file and go on with the next.
func (s *Session) CancelFile() { s.cancelFile.Store(true) }

// CancelGroup asks to stop the current file and skip the rest.
func (s *Session) CancelGroup() { s.cancelGroup.Store(true) }

// resetNegotiation returns to the protocol defaults used before any
// Send-Init: type-1 checks, window 1, short packets, all prefixed.
func (s *Session) resetNegotiation() {
	d := framing.DefaultParams()
	s.neg = negotiated{check: 1, window: 1, maxData: 90, timeout: s.cfg.Timeout, peer: d}
	s.receiving = false
	s.neg.out.QCTL, s.neg.in.QCTL = '#', '#'
	// A FORCE-3 peer is found again in each transaction (a server may
	// next serve a client that does not force it).
	s.c.force3.Store(s.cfg.Check == CheckForce3)
	s.c.probe3.Store(true)
	s.c.setCheck(1)
	s.c.eol = '\r'
	s.c.npad = 0
	s.sw.reset(1)
	s.rw.reset(1, 0)
}

// apply puts negotiated values into effect for both directions.
// The block check changes only after S: after I the command that
// follows (R, G) and its answer still use type 1, as C-Kermit does.
func (s *Session) apply(n negotiated, typ byte) {
	if typ != 'S' {
		n.check = 1
		n.streaming = false
	}
	s.neg = n
	if typ == 'S' {
		s.sawSendInit, s.resendAgreed = true, n.resend
	}
	s.peerWasKerf = n.peerKerf
	s.peerClassic = !n.peerKerf
	if !s.c.force3.Load() {
		s.c.probe3.Store(false)
	}
	// The peer's parity shows on its first packets or not at all.
	s.c.detectParity.Store(false)
	s.c.setCheck(n.check)
	if n.peer.EOL >= 1 && n.peer.EOL <= 31 {
		s.c.eol = n.peer.EOL
	} else {
		s.c.eol = '\r'
	}
	s.c.npad, s.c.padc = clamp(n.peer.NPad, 0, 94), n.peer.PadChar
	s.adapt.init(n.maxData)
	s.dTurnaround = 0 // a new peer may answer more slowly
	// Half a window: the peer works on one half while we fill the other.
	// (Measured on 2,000 small files: flushing every quarter, eighth or
	// single packet was slower, the more so the more often.)
	s.c.flushAfter = max(n.window/2, 1)
}

// errorPacket sends an E packet; failures are ignored since the session
// is ending anyway.
func (s *Session) errorPacket(msg string) {
	s.errorPacketAt(s.errorSeq(), msg)
}

// errorSeq is the number an E goes with now (errorPacket).
func (s *Session) errorSeq() int {
	seq := s.sw.next
	if s.sw.count > 0 && s.sw.size == 1 && s.nakedLo == s.sw.lo+1 {
		// A stop-and-wait receiver whose last word was a NAK of the
		// packet in flight waits on that number, and drops an E of the
		// next (G-Kermit NAKing a type-3 S it could not read: kerf's E
		// numbered 1 was dropped, and it NAKed on to its retry limit).
		// Otherwise the next: the packet in flight most likely arrives
		// first, and the E goes again once it is past (errorPacketAt).
		seq = s.sw.lo
	}
	if s.receiving && s.rw.started {
		// The number the sender waits on: the packet it sends next, or
		// the last one come if it is not answered yet (a stop-and-wait
		// sender, G-Kermit, drops a packet of any other number: QA, an
		// E of 1 at packet 14 left it resending).
		seq = s.rw.lo
		if last := (seq + 63) % 64; !s.rw.hasAck[last] {
			seq = last
		} else {
			// Past packets come and answered but not yet taken (a data
			// packet is ACKed as it comes): the sender is past them.
			for n := 0; n < 63 && s.rw.has[seq] && s.rw.hasAck[seq]; n++ {
				seq = (seq + 1) % 64
			}
		}
	}
	return seq
}

// noteAnswer keeps the packet just sent, numbered seq, as the answer
// to the command being served (lastAnswer).
func (s *Session) noteAnswer(seq int) {
	s.lastAnswer = append(s.lastAnswer[:0], s.c.scratch...)
	s.lastAnswerSeq = seq
}

// errorPacketAt is errorPacket numbered seq.
func (s *Session) errorPacketAt(seq int, msg string) {
	msg = string(s.concealed([]byte(msg)))
	var data []byte
	if s.peerClassic {
		// C-Kermit shows an E's data as it comes, undecoded: a repeat
		// prefix or a doubled # reached its user as "~$z" for "zzzz"
		// and "a##b" for "a#b" (QA s). Plain text, then: nothing that
		// needs a prefix. Only to a peer known classic: a kerf decodes
		// (the review: a kerf client's command sent without an I, its
		// answer plain, read "no#Such" as "no^Suchdir").
		data = fitMessage(plainText{sevenBit: s.neg.out.QBIN != 0}, msg, s.neg.maxData)
	} else {
		var enc framing.Quoting = s.neg.out
		data = fitMessage(&enc, msg, s.neg.maxData)
	}
	_ = s.c.send(seq, 'E', data)
	_ = s.c.flush()
	s.noteAnswer(seq)
	s.cfg.Log.Debug("sent E", "msg", msg)
	if inFlight := s.sw.bytes; s.cfg.LineSpeed > 0 && !s.neg.peerKerf && (s.receiving || s.sw.count > 0) {
		// Right behind a packet not yet answered (a sender's), or an
		// answer (a receiver's), a classic Kermit may throw the E away:
		// G-Kermit empties its input after each packet it reads (QA:
		// it went on waiting, as a receiver with the part it had under
		// the file's name, as a sender resending). Sent again once the
		// packet in flight is past, as G-Kermit itself waits a second
		// before its own E.
		if s.receiving {
			inFlight = s.rw.longest
		}
		if !s.receiving && seq == s.sw.lo && s.nakedLo == s.sw.lo+1 && s.sw.size == 1 {
			// Numbered for the packet in flight, which the peer NAKed
			// last (errorSeq): if it took the resend since, it waits
			// on the next (review 57), so the second goes so.
			seq = (seq + 1) % 64
		}
		time.Sleep(min(lineTime(inFlight, s.cfg.LineSpeed)+eAgainAfter, eAgainMost))
		_ = s.c.send(seq, 'E', data)
		_ = s.c.flush()
	}
}

// concealed is msg without the path Config.Conceal keeps from the peer
// (QA ar: a read error on a served file told the client the server's
// root, whatever the user's).
func (s *Session) concealed(msg []byte) []byte {
	if s.cfg.Conceal == nil {
		return msg
	}
	root := strings.TrimSuffix(s.cfg.Conceal(), "/")
	if root == "" {
		return msg // (a root of / names paths as the peer sees them)
	}
	var out []byte
	for {
		i := bytes.Index(msg, []byte(root))
		if i < 0 {
			return append(out, msg...)
		}
		out, msg = append(out, msg[:i]...), msg[i+len(root):]
		switch {
		case len(msg) > 0 && msg[0] == '/':
			msg = msg[1:] // a path within it, from there
		case len(msg) == 0 || bytes.IndexByte([]byte(` :,;)'"`), msg[0]) >= 0:
			out = append(out, '.') // the root itself
		default:
			out = append(out, root...) // another name it begins
		}
	}
}

// eAgainAfter and eAgainMost: how long after a packet's line time a
// stopping sender sends its E again (errorPacket), and the most it
// waits.
const (
	eAgainAfter = time.Second
	eAgainMost  = 5 * time.Second
)

// fitMessage encodes msg for a packet of at most most data bytes. One
// too long loses its middle, not its end: the cause is usually there
// ("...: no space left on device"), and a command sent with the
// protocol's defaults, as kerf sends MKDIR, is answered in a packet of
// 94 bytes (QA: a long path's "no space left on devi").
func fitMessage(enc messageEncoder, msg string, most int) []byte {
	data, n := enc.Encode(nil, []byte(msg), most)
	const gap = "..."
	for keep := n; n < len(msg) && keep > len(gap); keep-- {
		// Two thirds of what fits from the end, the rest from the
		// start, each cut where a character begins.
		tail := len(msg) - (keep-len(gap))*2/3
		for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
			tail++
		}
		head := keep - len(gap) - (len(msg) - tail)
		for head > 0 && !utf8.RuneStart(msg[head]) {
			head--
		}
		short := msg[:max(head, 0)] + gap + msg[tail:]
		if cut, m := enc.Encode(nil, []byte(short), most); m == len(short) {
			return cut
		}
	}
	return data
}

// messageEncoder encodes a message's bytes into at most most bytes of
// packet data, saying how many it took (framing.Quoting, plainText).
type messageEncoder interface {
	Encode(dst, src []byte, most int) ([]byte, int)
}

// plainText is an E's text for a classic Kermit, which shows it as it
// comes: every byte as itself, but a control character as a space and,
// over a 7-bit link (sevenBit), a byte past ASCII as "?".
type plainText struct{ sevenBit bool }

func (p plainText) Encode(dst, src []byte, most int) ([]byte, int) {
	n := min(len(src), most)
	for _, c := range src[:n] {
		switch {
		case c < 0x20 || c == 0x7f:
			c = ' '
		case c >= 0x80 && p.sevenBit:
			c = '?'
		}
		dst = append(dst, c)
	}
	return dst, n
}

// lineTime is how long a line of speed bits per second takes to carry n
// bytes (10 bits each: start, 8 data, stop).
func lineTime(n, speed int) time.Duration {
	return time.Duration(float64(n) * 10 * float64(time.Second) / float64(speed))
}

// peerReasonWait is how long peerReason listens for the peer's E.
const peerReasonWait = 500 * time.Millisecond

// peerReason returns, for a data path that failed (err), the peer's E
// packet if one arrives on the control link soon: a peer that ends the
// session (a server shutting down, or dropping an idle session) closes
// its data connections as it says why, and "the server is shutting
// down" tells the user more than "data connection lost".
func (s *Session) peerReason(ctx context.Context, err error) error {
	deadline := time.Now().Add(peerReasonWait)
	for ctx.Err() == nil {
		p, ok, rerr := s.read(ctx, max(time.Until(deadline), time.Nanosecond))
		switch {
		case rerr != nil && ctx.Err() == nil:
			// The link ended too: that is what ends the session.
			return fmt.Errorf("%w (%w)", err, rerr)
		case !ok:
			return err
		case !p.bad && p.Type == 'E':
			msg := s.decodeMessage(p.Data)
			return fmt.Errorf("%w (%v)", &PeerError{Msg: msg}, err)
		}
	}
	return err
}

// abort sends an E packet describing err and returns err.
func (s *Session) abort(err error) error {
	if !s.answered && !s.cfg.Reliable && !s.serving && isLinkError(err) && !errors.Is(err, ErrNoAnswer) {
		// A line (a command's pipes) that failed before a packet of
		// the peer was heard: no peer answered, as one silent to the
		// retry limit (QA ao: a --command whose ssh could not reach its
		// host exited 4, a transfer's failure, not 3).
		err = fmt.Errorf("%w (%w: not one packet of it was heard)", err, ErrNoAnswer)
	}
	var pe *PeerError
	var told *toldError
	var ended *endedError
	if errors.As(err, &pe) || errors.Is(err, ErrPeerRestarted) || errors.As(err, &told) {
		return err // never answer an E with an E, nor a new S with one, nor say it twice
	}
	if errors.As(err, &ended) {
		return err // the transaction ended as the protocol ends it: nothing to tell
	}
	if errors.Is(err, ErrPeerNotForce3) {
		s.plainErrorPacket(blockCheck5Short)
		return err
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "Transfer canceled"
	}
	s.errorPacket(msg)
	return err
}

// blockCheck5Short is what a peer that does not force type 3 is told,
// in one short packet.
const blockCheck5Short = "block check 5 (type 3 on every packet) is set here: SET BLOCK-CHECK 5 at both ends, or at neither"

// plainErrorPacket sends msg in an E the peer can read before anything
// is agreed: a short packet with a type-1 check, whatever this side
// forces. Sent with type 3 (block check 5), a peer that does not force
// it threw it away as damaged, and waited out its retries with no reason
// (QA an: 81 s for C-Kermit).
func (s *Session) plainErrorPacket(msg string) {
	forced := s.c.force3.Swap(false)
	chk := s.c.wchk
	s.c.setCheck(1)
	_ = s.c.send(s.errorSeq(), 'E', fitMessage(plainText{sevenBit: true}, msg, framing.MaxShortLen-5))
	_ = s.c.flush()
	s.c.setCheck(chk)
	s.c.force3.Store(forced)
	s.cfg.Log.Debug("sent E", "msg", msg)
}

// toldError is an error this side has already said to the peer in an
// E: abort does not say it again.
type toldError struct{ err error }

func (e *toldError) Error() string { return e.err.Error() }
func (e *toldError) Unwrap() error { return e.err }

// read waits for the next packet from the reader, up to d (0 = forever).
// It returns ok=false on timeout.
func (s *Session) read(ctx context.Context, d time.Duration) (inPacket, bool, error) {
	return s.readWatching(ctx, d, watchNone)
}

// dataWatch is what of the data path's failure a read watches for.
type dataWatch int

const (
	watchNone dataWatch = iota
	// watchLocal: a failure found on this side (DataFailure's
	// LocalFailure) ends the read with its cause; a lost connection is
	// left to the receiving side's waits. A sender waiting for ACKs
	// (pump) watches so: a stall it found is said in its E at once,
	// where otherwise the peer, seeing only the connections close, said
	// "lost" first and the cause went unsaid.
	watchLocal
	// watchAll: watchLocal, and a lost connection starts the wait for
	// the peer to say anything (dataLossGrace).
	watchAll
)

// readWatching is read that, as watch asks, also ends when the data path
// fails for a cause found on this side (DataFailure), with that cause.
func (s *Session) readWatching(ctx context.Context, d time.Duration, watch dataWatch) (inPacket, bool, error) {
	if p := s.again; p != nil {
		s.again = nil
		return *p, true, nil
	}
	if s.linkErr != nil {
		// The reader delivered the link's end once, and has stopped:
		// nothing will come, so a later command fails at once rather
		// than through minutes of timeouts.
		return inPacket{}, false, s.linkErr
	}
	select {
	case p := <-s.c.in:
		return s.heard(p)
	default:
	}
	if err := s.c.flush(); err != nil {
		return inPacket{}, false, err
	}
	defer s.waitingOnPeer()()
	var tc <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	var failed <-chan struct{}
	var df DataFailure
	if watch != watchNone && !s.dataFailureSeen {
		if df, _ = s.data.(DataFailure); df != nil {
			failed = df.Failed()
		}
	}
	var quiet <-chan time.Time // the peer silent since the data path went
	if watch == watchAll && !s.dataLostHeard.IsZero() {
		t := time.NewTimer(time.Until(s.dataLostHeard.Add(dataLossGrace)))
		defer t.Stop()
		quiet = t.C
	}
	for {
		select {
		case p := <-s.c.in:
			return s.heard(p)
		case <-tc:
			return inPacket{}, false, nil
		case <-ctx.Done():
			return inPacket{}, false, ctx.Err()
		case <-quiet:
			return inPacket{}, false, &DataPathError{Err: errDataLostSilence}
		case <-failed:
			if err := df.LocalFailure(); err != nil {
				// Once: the path stays failed, and its failure is told
				// once.
				s.dataFailureSeen = true
				return inPacket{}, false, &DataPathError{Err: err}
			}
			if watch == watchLocal {
				failed = nil
				continue
			}
			s.dataFailureSeen = true
			// A lost connection: the peer or the link says more, but
			// the peer may be waiting on this side as this side on it
			// (QA: a send's sessions and their server waited so until
			// the take-over, a minute later).
			failed = nil
			s.dataLostHeard = time.Now()
			t := time.NewTimer(dataLossGrace)
			defer t.Stop()
			quiet = t.C
		}
	}
}

// heard is got of a packet read, noting that the peer spoke.
func (s *Session) heard(p inPacket) (inPacket, bool, error) {
	if !s.dataLostHeard.IsZero() {
		s.dataLostHeard = time.Now()
	}
	return s.got(p)
}

// dataLossGrace is how long a session whose data connections were lost
// waits for its peer to say anything before it counts itself lost: no
// file can move any more, and each side may be waiting on the other.
var dataLossGrace = 5 * time.Second

// errDataLostSilence ends a session whose data connections were lost
// and whose peer said nothing for dataLossGrace since.
var errDataLostSilence = errors.New("kermit: the data connections were lost and the peer has said nothing since")

// DataPathError is the failure of the data path, found on this side,
// that ends a session: no file can go over it any more.
type DataPathError struct{ Err error }

func (e *DataPathError) Error() string { return e.Err.Error() }
func (e *DataPathError) Unwrap() error { return e.Err }

// initShaped reports whether p carries Send-Init fields: an S or I, or
// the ACK of the S or I this side has in flight.
func (s *Session) initShaped(p inPacket) bool {
	switch p.Type {
	case 'S', 'I':
		return true
	case 'Y':
		sl := s.sw.inFlight(p.Seq)
		return sl != nil && !sl.acked && (sl.typ == 'S' || sl.typ == 'I')
	}
	return false
}

// ErrPeerNotForce3 matches (errors.Is) the error of a session that
// forces type 3 on every packet (CheckForce3) with a peer that does not.
var ErrPeerNotForce3 = errors.New("kermit: the peer does not use block check 5 (type 3 on every packet)")

func (s *Session) got(p inPacket) (inPacket, bool, error) {
	if p.err != nil {
		var le *LinkError
		if errors.As(p.err, &le) {
			s.linkErr = p.err
		}
		return p, false, p.err
	}
	if !p.bad {
		s.nakedLo = 0
		if p.Type == 'N' {
			s.nakedLo = p.Seq + 1
		}
	}
	if !p.bad && !s.cfg.Reliable && s.initShaped(p) && !framing.PlausibleParams(p.Data) {
		// A Send-Init or its ACK passes only a 6-bit check: one damaged
		// so that it passed (one in 64) would agree to fields shifted by
		// a character the line added (QA: check type 1 and a NUL pad
		// agreed to a receiver on type 3, 21 NAKs, "too many retries").
		p = inPacket{bad: true}
	}
	if !p.bad && p.weak && p.Type != 'E' && s.c.force3.Load() {
		// A Send-Init (or command) in type 1 while this side forces
		// type 3 on every packet: a peer set otherwise, which cannot
		// read this side's packets either. Said at its second, not
		// after every retry of both sides (QA ae: 111 s against a
		// default C-Kermit); one alone may be damage passing the 6-bit
		// check.
		if p.Type == 'N' {
			// G-Kermit, which has no type 5, NAKs the S in type 1 each
			// time it comes, to its retry limit; so may a peer whose
			// copies came damaged, or one waiting before this side
			// began (C-Kermit NAKs while it waits, and reads a type-3
			// S when it comes: review 57). Four, each alone on the
			// line (not a burst that waited), tell G-Kermit; one from
			// a peer heard in type 3 is damage.
			alone := !s.answered && len(s.c.in) == 0
			if alone {
				s.weakNAKs++
			}
			if !alone || s.weakNAKs < 4 {
				s.stats.BadPackets++
				return inPacket{bad: true}, true, nil
			}
		} else if s.weakInits++; s.weakInits < 2 {
			s.stats.BadPackets++
			return inPacket{bad: true}, true, nil
		}
		const both = "block check 5 needs it at both ends: C-Kermit's SET BLOCK-CHECK 5, kerf's --block-check 5; or neither"
		if p.Type == 'N' {
			return p, false, fmt.Errorf("%w: it NAKs this side's type-3 packets in type 1 (%s; G-Kermit has none)", ErrPeerNotForce3, both)
		}
		return p, false, fmt.Errorf("%w: its %c packet has check type 1 (%s)", ErrPeerNotForce3, p.Type, both)
	}
	if !p.bad && p.weak && p.Type == 'E' && !s.cfg.Reliable {
		// An E that passed only the 6-bit check while a stronger one is
		// agreed: a restarted peer's, which has agreed nothing, or a
		// packet numbered 0 whose type a bit error made E (a D, E's
		// neighbour), passing it one time in 64 (QA: 1 run in 600 at
		// BER 5e-4 ended with a D's data as the peer's message). A
		// restarted peer answers every packet so: believed when a second
		// comes with no good packet between.
		if s.weakE == "" {
			s.weakE, _ = s.decodeString(p.Data)
			if s.weakE == "" {
				s.weakE = "(no message)"
			}
			p = inPacket{bad: true}
		}
	} else if !p.bad {
		s.weakE = ""
		s.answered = true
		if !p.weak {
			s.weakInits = 0
		}
	}
	if p.bad {
		s.stats.BadPackets++
	} else if s.peerHashingUntil.Load() != 0 && (s.peerHashingAck < 0 || p.Type != 'Y' || p.Seq == s.peerHashingAck) {
		s.peerHashingUntil.Store(0) // it answered: its check is done
	}
	if p.parity != "" {
		s.followParity(p.parity)
	}
	if p.chk3 && !s.c.force3.Load() {
		if s.asksAfterInit(p) || s.initTry3(p) {
			p.chk3 = false
			return p, true, nil
		}
		if !s.forcesType3(p) {
			s.stats.BadPackets++
			return inPacket{bad: true}, true, nil
		}
		// So does this side, from the answer to this packet on, until
		// the transaction ends.
		s.cfg.Log.Debug("peer uses type 3 on every packet (block check 5)")
		s.c.force3.Store(true)
		s.c.setCheck(3)
	}
	return p, true, nil
}

// paritySetter is a link whose software parity can be switched
// (serialfallback.Link).
type paritySetter interface{ SetParity(name string) error }

// followParity turns this side 7-bit with the parity the peer was found
// to use (Config.DetectParity): the link writes it and strips it (or,
// on a link that cannot, such as TCP to a C-Kermit told SET PARITY,
// the session writes it), and negotiation asks for 8th-bit prefixing,
// as with Config.Parity.
func (s *Session) followParity(kind string) {
	// The reader reads 7-bit from now on whatever the link can do, so the
	// session is 7-bit too: a link left writing 8-bit still reaches a
	// peer that ignores the 8th bit, as software parity does.
	s.cfg.Parity = true
	ps, ok := s.c.rw.(paritySetter)
	if !ok {
		if p, known := framing.ParityByName(kind); known {
			s.c.wpar = p
		}
		s.cfg.Log.Info("peer uses parity: following", "parity", kind)
		return
	}
	if err := ps.SetParity(kind); err != nil {
		s.cfg.Log.Warn("peer uses parity, which the link cannot write", "parity", kind, "err", err)
		return
	}
	s.cfg.Log.Info("peer uses parity: following", "parity", kind)
}

// asksAfterInit reports whether p, which passed only a type-3 check
// before a Send-Init was agreed, is the peer's NAK of the packet after
// this side's S or I, still unanswered: the peer ACKed a copy, agreed
// type 3, and its ACK was lost; its timeout then asks for packet 1 with
// the check just agreed (kerf and C-Kermit both). Taken so, it has the
// S sent again at once (handleReply), not after this side's timeouts
// (a slipping line: 15 s before the first file).
func (s *Session) asksAfterInit(p inPacket) bool {
	if p.Type != 'N' || p.Seq != s.sw.next {
		return false
	}
	sl := s.sw.inFlight((p.Seq + 63) % 64)
	return sl != nil && !sl.acked && (sl.typ == 'S' || sl.typ == 'I')
}

// initTry3 reports whether p, which passed only a type-3 check before
// a Send-Init was agreed, is a kerf peer's type-3 try of its S or I
// (Session.transmit alternates them, for a peer that forces type 3): it
// does not say "5", and this side has sent nothing it could echo. It is
// answered as the type-1 copy would be. Ignored, as it was, a damaged S
// cost two of the sender's timeouts rather than one (a slipping line:
// 15 s before the first file, its tries waiting 1, 2, 4 and 8 s).
func (s *Session) initTry3(p inPacket) bool {
	return (p.Type == 'S' || p.Type == 'I') && !says5(p.Packet) && s.sw.count == 0
}

// forcesType3 judges a packet that passed only a type-3 check before
// any Send-Init was agreed: it comes from a peer that forces type 3 if
// it is a Send-Init or its ACK saying so (CHKT "5"), a command (R, G,
// ...: only a client sends them), or the ACK of our own Send-Init try
// with type 3 (C-Kermit then answers "3"). Anything else (our own S
// echoed back, a leftover of an earlier transaction's type-3 data
// phase) is damage to this side; a kerf peer's type-3 try of its S is
// judged before (initTry3).
func (s *Session) forcesType3(p inPacket) bool {
	if says5(p.Packet) || strings.IndexByte(initTypes[2:], p.Type) >= 0 {
		return true
	}
	sl := s.sw.inFlight(p.Seq)
	if sl == nil || sl.acked || sl.typ != 'S' && sl.typ != 'I' {
		return false
	}
	switch p.Type {
	case 'Y':
		return sl.chk == 3
	case 'N':
		// The NAK of a type-1 Send-Init, itself type 3: the peer could
		// not read the S and answers as it always does (C-Kermit's
		// block check 5, which NAKs so at once). Resent type 3 at once,
		// not after a timeout (none over TCP, where nothing is resent
		// on timeouts: it waited 21 of them).
		return true
	}
	return false
}

// Flush writes any packets still queued; the public entry points call it
// before they return.
func (s *Session) flush() error { return s.c.flush() }

// decodeString decodes a prefixed data field into a string.
func (s *Session) decodeString(data []byte) (string, error) {
	out, err := s.neg.in.Decode(nil, data)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return string(out), nil
}

// decodeMessage is an E's text: decoded, or as it came when it does
// not decode (a peer that sends its messages plain, as kerf does to a
// classic Kermit, whose "#" is then no prefix).
func (s *Session) decodeMessage(data []byte) string {
	if msg, err := s.decodeString(data); err == nil {
		return msg
	}
	return string(data)
}

// encodeString encodes b whole into one data field; it fails if the
// result would not fit one packet.
func (s *Session) encodeField(b []byte) ([]byte, error) {
	limit := s.fieldLimit()
	out, n := s.neg.out.Encode(nil, b, limit)
	if n < len(b) {
		return nil, fmt.Errorf("kermit: %w (%d bytes; one holds at most about %d here)", ErrFieldTooLong, len(b), limit)
	}
	return out, nil
}

// fieldLimit is the most encoded bytes one data field of a name or a
// report takes: up to a short packet's whole length whatever the peer
// asked for, as C-Kermit does for a name: a peer asking for 40-byte
// packets still takes 94 (every Kermit's buffer does), and a longer
// name could not be sent at all.
func (s *Session) fieldLimit() int {
	return max(s.neg.maxData, framing.MaxShortLen-2-s.neg.check.Len())
}

// attrRoom is the most bytes one A packet's data takes: the negotiated
// length, but at least attrFieldMost. An attribute is never split
// (framing.Attributes.Marshal leaves out one that does not fit), so
// packets shorter than the longest one kerf sends, the date to the
// nanosecond, would lose the file's time: with them an A packet takes
// that much, as a name takes a whole short packet (fieldLimit).
func (s *Session) attrRoom() int { return max(s.neg.maxData, attrFieldMost) }

// attrFieldMost is the longest attribute field kerf sends: '#', its
// length, and "yyyymmdd hh:mm:ss.nnnnnnnnn".
const attrFieldMost = 2 + 27

// ErrFieldTooLong is a name, or a command's argument, that does not fit
// one packet: nothing the link did, so no reason to dial again.
var ErrFieldTooLong = errors.New("field does not fit one packet")
