package kermit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"kerf/framing"
)

// Receive receives one file group into store: it waits for the peer's S,
// then files until B.
func (s *Session) Receive(ctx context.Context, store Store) error {
	defer s.flush()
	s.ended = false
	for {
		s.resetNegotiation()
		err := s.recvGroup(ctx, store, nil, false)
		if errors.Is(err, ErrPeerRestarted) {
			// A sender killed and run again: its files so far are kept
			// for recovery, and its new S starts the transfer again.
			continue
		}
		if err != nil {
			return s.abort(err)
		}
		return nil
	}
}

// answerInit handles a received S or I packet: negotiates and ACKs with
// our parameters. The ACK travels with a type-1 check; the agreed check
// applies to everything after it, so the reader switches first.
func (s *Session) answerInit(ctx context.Context, p framing.Packet, server bool) error {
	peer, err := framing.ParseParams(p.Data)
	if err != nil {
		return fmt.Errorf("%w: peer's send-init: %v", ErrProtocol, err)
	}
	mine := myParams(&s.cfg, server)
	// The receiver answers with the sender's block check when it has it,
	// as C-Kermit does: the sender (C-Kermit at least) then uses whatever
	// the ACK says, so the ACK must say what this side will use.
	if peer.Check >= 1 && peer.Check <= 3 {
		mine.Check = peer.Check
	} else {
		mine.Check = 1
	}
	// A peer that forces type 3 (its S came with it; the reader has
	// switched this side, and the ACK goes with type 3 too) hears so.
	mine.Force3 = s.c.force3.Load()
	if s.cfg.MaxPacket == 0 && peer.Capas2&capas2RawOK == 0 {
		mine.MaxLenX = classicMaxPacket
		if s.cfg.LineSpeed > 0 {
			if peer.Capas&framing.CapWindows != 0 && peer.Window > 1 {
				mine.MaxLenX = classicSerialMaxPacket
			}
			// At most about a second of the line a packet: a slow line
			// then turns round often enough for timers of seconds, and a
			// damaged packet costs a second, not half a minute (4000
			// bytes at 1200 bps).
			mine.MaxLenX = max(framing.MaxShortLen, min(mine.MaxLenX, s.cfg.LineSpeed/10))
		}
	}
	switch {
	case s.textReply && s.data == nil:
		// A text reply, even a listing of millions of lines, goes
		// in-band well enough (forText); without the bit this
		// transaction is classic, and the next Send-Init offers again
		// (protocol.md §4.1).
		mine.Capas2 &^= framing.Cap2DualChannel
	case s.cfg.Dual != nil && s.data == nil && peer.Capas2&framing.Cap2DualChannel != 0:
		mine.Ext = s.cfg.Dual.Offer(peer.Ext)
	}
	if peer.Capas2&capas2RawOK == 0 && isPrefixChar(peer.REPT) {
		// A classic peer's own repeat prefix is taken, as C-Kermit takes
		// the proposer's: answered with '~', it would do no repeat
		// counts (QA ae: 39 packets for C-Kermit's 7) and may yet
		// encode as if its own were agreed.
		s.peerRept = peer.REPT
		if peer.REPT != mine.QCTL && peer.REPT != mine.QBIN {
			mine.REPT = peer.REPT
		}
	}
	if mine.REPT == peer.QCTL || mine.REPT == peer.QBIN {
		// The prefixes must differ (KPM): a peer whose control or
		// 8th-bit prefix is the repeat prefix hears repeat counts are
		// off, rather than having its prefixed bytes read as counts
		// (QA: agreed to, then "bad prefix encoding").
		mine.REPT = ' '
	}
	n := negotiate(&s.cfg, mine, peer, false)
	wire, err := s.c.encode(framing.Packet{Seq: p.Seq, Type: 'Y', Data: mine.Marshal()}, 1)
	if err != nil {
		return err
	}
	s.apply(n, p.Type)
	s.rw.size = n.window
	s.rw.acks[p.Seq], s.rw.hasAck[p.Seq] = wire, true
	s.rw.rawAck[p.Seq] = true
	if p.Type == 'S' {
		// the sender's next packets follow this sequence
		s.sw.next = (p.Seq + 1) % 64
		s.receiving = true
	}
	if err := s.c.writeRaw(wire); err != nil {
		return err
	}
	return s.openDual(ctx)
}

// groupBatcher is a Store that can defer the fsyncs of the files it
// commits to one flush per file group (filestore.Dir): between
// BeginBatch and EndBatch, Commit may leave a file under its temporary
// name until EndBatch makes it durable and renames it.
type groupBatcher interface {
	BeginBatch()
	EndBatch() error
}

// classicMaxPacket is what kerf asks a classic Kermit to send at most
// when the user chose no packet length (see Config.MaxPacket), and
// classicSerialMaxPacket the same on a serial line when the sender
// uses sliding windows (a stop-and-wait sender, G-Kermit, pays a turn
// of the line per packet and keeps the longer one). A classic sender
// keeps the negotiated length whatever the line does, so the choice is
// made once for clean and noisy lines alike: at a bit error rate of 1e-5
// a 4000-byte packet is damaged one time in four, a 2000-byte one one
// time in seven. Measured with C-Kermit sending at 115200 bps over lineem
// (docs/benchmarks.md): at BER 1e-5 2000 bytes gave 62-76% against
// 56-63% with 4000, and the same 85.5% on a clean line.
const (
	classicMaxPacket       = 4000
	classicSerialMaxPacket = 2000
)

// maxAttrPackets is the most A packets a file may have: a sender needs
// one, a few on a line of short packets.
const maxAttrPackets = 64

// recvFile is the state of the file being received.
type recvFile struct {
	inc         Incoming
	name        string
	attrs       framing.Attributes
	attrPackets int
	haveAttr    bool
	refused     bool
	cutOff      bool // ended before its data did; its partial kept (keepPartial)
	partKept    bool // keepPartial kept something of it
	// flushProgress reports exactly what its data path wrote so far
	// (Session.progress), for a file cut off; nil if none.
	flushProgress func()
	dir           bool  // a directory (sendDir): F, Z and perhaps A
	why           error // why it was refused, for a kerf peer
	// overrun: why its data, more than announced and checked by block
	// check 1 only, is not stored; the file was canceled (X) on it.
	overrun error
	// writeErr: a write of its D data failed (the disk full): the file
	// was canceled (X) on it and fails at its Z, not the group.
	writeErr error
	// cancelSaid: a cancel of it went to a streaming sender.
	cancelSaid bool
	// deferred: the refusal is reported at the Z, whose reason (a
	// kerf sender's) says better why (dirInGroup).
	deferred bool
	off      int64 // next write offset
	start    int64 // resume point
	text     bool
	pendCR   bool
	latin1   bool   // text in ISO 8859-1, stored as UTF-8
	prefix   uint32 // CRC-32C of the kept partial when resuming
	kept     int64  // bytes past start the partial had (ranges kept), not sent again
	// crc is the CRC-32C of the data decoded from D packets, in the
	// transfer's canonical form (capas3FileCRC).
	crc      uint32
	id       uint32
	expected bool
	prepared bool // partial data dealt with: truncated, or kept for recovery
	began    time.Time
	display  io.Writer // X packet: text goes here, not to a file
}

// recvGroup runs the receiving side of one transaction. If gotS is
// true the S packet has already been answered.
func (s *Session) recvGroup(ctx context.Context, store Store, display io.Writer, gotS bool) (err error) {
	s.awaitingS = !gotS
	defer func() { s.awaitingS = false }()
	s.cancelFile.Store(false)
	s.cancelGroup.Store(false)
	var cur *recvFile
	// A classic peer's names as stored (lower-cased: convertedName, or
	// as they came), by the name each came as: DATA.BIN and data.bin of
	// one group, or a name sent twice, would be one file, the second
	// stored over the first without a word.
	converted := map[string]string{}
	defer func() {
		if cur != nil && cur.deferred {
			s.event(Event{Kind: FileFailed, Name: cur.name, Err: cur.why})
		}
		if cur != nil && cur.inc != nil {
			// Cut off (the link, an E, a cancel): the file is not here.
			path := cur.inc.Name()
			kept := false
			if cur.text || cur.attrs.Length < 0 && s.neg.peerKerf {
				// (Of no announced length, from a kerf: a stream it
				// cannot send again from where it stopped; kept, it
				// held the disk it filled.) Its blocks, if any, stop
				// first: none is written once the file is closed.
				if s.dualActive() && cur.expected {
					s.data.Abandon(cur.id)
				}
				cur.inc.Abort(false)
			} else {
				kept = s.keepPartial(cur, cur.inc)
			}
			why := err
			if why == nil {
				why = errors.New("the transfer ended before the file did")
			}
			if kept {
				// As a sender says "not sent whole" (QA: a get cut off
				// said only what cut it).
				why = fmt.Errorf("%w: %w", ErrPartialKept, why)
			}
			if cur.flushProgress != nil {
				cur.flushProgress() // what came counts exactly (progress)
			}
			s.event(Event{Kind: FileFailed, Name: cur.name, Err: &CutOffError{why}, Path: path})
			if errors.Is(err, ErrPeerRestarted) {
				// Its sender, run again, may well send it again (a
				// RESEND): then it is not a failure after all.
				s.abandon(cur.name)
			}
		}
	}()
	// A store that batches its fsyncs makes the whole group durable once,
	// before B is acknowledged: a sender told the group is done has every
	// file under its final name on disk. A failed group still completes
	// the files it committed.
	batch, _ := store.(groupBatcher)
	// partErr is a part's failed save (savedEvery), said at the B as a
	// failed save there is: the group goes on, and the sender then
	// confirms the files it could not count as saved (sendConfirming),
	// as it does after a failed B.
	var partErr error
	s.unsaved = s.unsaved[:0]
	s.dirsToFinish = s.dirsToFinish[:0]
	s.batching = batch != nil
	if batch != nil {
		batch.BeginBatch()
		defer func() {
			if batch != nil {
				s.saveBatch(batch)
			}
		}()
	}
	timeout := s.cfg.Timeout
	staleE := "" // an E passed over before any S
	for {
		if s.neg.streaming {
			timeout = s.cfg.IdleTimeout
		} else if gotS {
			timeout = max(s.neg.timeout, s.cfg.MinTimeout)
		}
		p, err := s.nextPacket(ctx, timeout)
		// (errors.AsType: a variable for errors.As, taken by address,
		// was allocated for every packet.)
		if pe, ok := errors.AsType[*PeerError](err); ok && !gotS && !s.cfg.Reliable {
			// An E before any S on a serial line is what an earlier
			// session left there (C-Kermit's receiver passes over it
			// too): no sender of this transfer has spoken yet.
			s.cfg.Log.Info("ignoring an error packet before S", "msg", pe.Msg)
			staleE = pe.Msg
			s.rw.reset(1, 0)
			continue
		}
		if err != nil {
			if staleE != "" && !gotS && errors.Is(err, ErrTooManyRetries) {
				// No S came after it: it may have been this sender's
				// reason, which the user should hear (QA: blamed on the
				// speed or parity alone).
				return fmt.Errorf("%w; before that an error packet came, taken for one an earlier transfer left on the line: %q", err, staleE)
			}
			return err
		}
		if !gotS && p.Type != 'S' {
			// Leftovers of an earlier transfer still on the line: wait
			// for the S that starts this one.
			s.cfg.Log.Debug("ignoring packet before S", "type", string(p.Type), "seq", p.Seq)
			s.rw.reset(1, 0)
			continue
		}
		switch p.Type {
		case 'S':
			if err := s.answerInit(ctx, p, false); err != nil {
				return err
			}
			gotS, s.awaitingS = true, false
			if batch != nil && !s.neg.peerKerf {
				// A classic Kermit takes the ACK of a file's Z for the
				// file stored, and C-Kermit's SEND /DELETE removes its
				// source then: each file is saved under its name,
				// durably, before its Z is answered, not at the group's
				// end (QA s: a server killed a moment after lost every
				// file of a move).
				err := s.saveBatch(batch)
				batch, s.batching = nil, false
				if err != nil {
					return fmt.Errorf("kermit: %w", err)
				}
			}
		case 'F', 'X':
			if !gotS {
				return fmt.Errorf("%w: %c packet before S", ErrProtocol, p.Type)
			}
			s.countFileID(s.rw.deliveredID)
			if cur != nil {
				// The last file not ended: cut off as by any other end
				// of the group (the deferred func), not left open with
				// its lock (QA aq: F after F without Z held a descriptor
				// each, and the name locked, for the server's life).
				return fmt.Errorf("%w: %c packet before the Z of %s", ErrProtocol, p.Type, cur.name)
			}
			name, err := s.decodeString(p.Data)
			if err != nil {
				return err
			}
			var clash error
			if p.Type == 'F' && !s.neg.peerKerf {
				sent := name
				if !s.peerLiteralNames() {
					name = convertedName(name)
				}
				first, ok := converted[name]
				switch {
				case strings.Trim(name, " /") == "":
					// (No name: each is stored as NONAME.n, below.)
				case ok && first != sent:
					clash = fmt.Errorf("%s and %s, both sent in this group, would both be stored as %s: the second is not stored", first, sent, name)
				case ok:
					// The same name twice (send */README): a kerf
					// sender refuses the second itself (QA: a classic
					// sender's second was stored over the first).
					clash = fmt.Errorf("%s was sent twice in this group: the second is not stored over the first", sent)
				default:
					converted[name] = sent
				}
			}
			if p.Type == 'F' && (name == "" || !s.neg.peerKerf && strings.Trim(name, " /") == "") {
				// G-Kermit sends an empty name for one it cannot
				// convert (non-ASCII): store it as C-Kermit does. A kerf
				// peer's name of spaces is a name (Unix allows it).
				s.nonames++
				name = "NONAME"
				if s.nonames > 1 {
					name = fmt.Sprintf("NONAME.%d", s.nonames)
				}
				s.cfg.Log.Warn("the sender gave no file name: stored under a name of its own", "name", name)
			}
			cur = &recvFile{name: name, id: s.recvFileID, text: s.cfg.Text, began: time.Now(), attrs: framing.NewAttributes()}
			if s.neg.peerKerf {
				cur.attrs.Zone = time.UTC // as the kerf sender writes them
			}
			reply := []byte(nil)
			if p.Type == 'X' {
				// Text for the screen travels in canonical (CRLF) form.
				cur.text = true
				cur.display = display
				if cur.display == nil {
					cur.display = io.Discard
					if s.serving && s.neg.peerKerf && name == skipTitle {
						cur.display = newSkipSink(s)
					}
				}
			} else if store == nil {
				return fmt.Errorf("%w: peer sent a file where text was expected", ErrProtocol)
			} else if strings.HasSuffix(name, "/") && s.neg.peerKerf {
				// A directory from a kerf peer (sendDir): made now, or
				// with its attributes, if they come, at its Z.
				cur.dir = true
				if !s.neg.dirAttrs {
					s.makeDir(store, cur)
				}
			} else {
				inc, err := Incoming(nil), clash
				if err == nil {
					inc, err = store.Create(name)
				}
				if err != nil {
					if !s.neg.attrs {
						return fmt.Errorf("kermit: cannot receive %q: %w", name, err)
					}
					s.cfg.Log.Info("refusing file", "name", name, "err", err)
					cur.refused, cur.why = true, err
					if s.neg.peerKerf {
						// Told at the Z: a kerf sender's Z may say
						// why it could not send this "file" (a
						// directory it could not read, whose own entry
						// came first; a link leading out of its tree
						// where this side has a directory), which
						// says better what went wrong than the clash
						// of names here (QA).
						cur.deferred = true
					} else {
						s.event(Event{Kind: FileFailed, Name: name, Err: err})
						// Said in its A's ACK if one comes; a sender
						// that sends none hears it in its D's ACK, X
						// (cancel the file), as a Kermit canceling a
						// file says it (QA: every packet of it was
						// ACKed empty, and the sender took the file for
						// delivered). Cleared at its Z.
						s.cancelFile.Store(true)
					}
				} else {
					cur.inc = inc
					if enc, err := s.encodeField([]byte(inc.Name())); err == nil {
						reply = enc
					}
				}
			}
			if err := s.ackRecv(p.Seq, reply); err != nil {
				return err
			}
		case 'A':
			if cur == nil || cur.dir && !s.neg.dirAttrs {
				return fmt.Errorf("%w: A packet without a file's F", ErrProtocol)
			}
			if cur.attrPackets++; cur.attrPackets > maxAttrPackets {
				// Each is merged into what came before: an endless run
				// of them held a session's memory and a core (QA aq).
				return fmt.Errorf("%w: more than %d attribute packets for %s", ErrProtocol, maxAttrPackets, cur.name)
			}
			if cur.dir {
				if err := cur.attrs.Parse(p.Data); err != nil {
					return fmt.Errorf("%w: attributes of %s: %v", ErrProtocol, cur.name, err)
				}
				cur.haveAttr = true
				if err := s.ackRecv(p.Seq, nil); err != nil {
					return err
				}
				continue
			}
			reply, err := s.handleAttrs(cur, p.Data)
			if err != nil {
				return err
			}
			if err := s.ackRecv(p.Seq, reply); err != nil {
				return err
			}
		case 'D':
			if cur == nil || cur.dir {
				return fmt.Errorf("%w: D packet without a file's F", ErrProtocol)
			}
			if err := s.writeData(cur, p.Data); err != nil {
				return err
			}
			if s.neg.streaming && !cur.cancelSaid && (s.cancelFile.Load() || s.cancelGroup.Load()) {
				// While streaming, data is not ACKed; the cancel is
				// sent once (each later one came under a number the
				// sender had used since for an F, A or Z: review 58).
				cur.cancelSaid = true
				if err := s.ackData(p.Seq); err != nil {
					return err
				}
			}
		case 'Z':
			if cur == nil {
				return fmt.Errorf("%w: Z packet without F", ErrProtocol)
			}
			var path string
			if cur.inc != nil {
				path = cur.inc.Name()
			}
			if cur.dir && s.neg.dirAttrs {
				s.makeDir(store, cur)
			}
			err := s.finishFile(ctx, cur, p.Data)
			if err != nil && !cur.refused && !cur.dir {
				// Said to the peer too; logged for a server's operator
				// (whose log raises its storage failures to warn).
				s.cfg.Log.Info("file not stored", "name", cur.name, "err", err)
				why := err
				if _, ns := errors.AsType[*notStoredError](err); cur.cutOff && !ns {
					// The session ends here, and the partial stays.
					if cur.partKept {
						// (QA ar: a get interrupted as it waited for the
						// last blocks said nothing of it was kept.)
						why = fmt.Errorf("%w: %w", ErrPartialKept, err)
					}
					why = &CutOffError{why}
					if cur.flushProgress != nil {
						cur.flushProgress()
					}
				}
				s.event(Event{Kind: FileFailed, Name: cur.name, Err: why, Path: path})
			}
			var reply []byte
			if cur.dir && cur.why != nil {
				// A directory this side could not make (only a kerf
				// sender sends directories; see sendDir).
				reply = s.refusalAck(cur.why)
			}
			if ns, ok := errors.AsType[*notStoredError](err); ok {
				// This file only (capas2NotStored): the sender hears
				// why, and the next file comes.
				reply, err = s.refusalAck(ns.err), nil
			}
			cur = nil
			if err != nil {
				return err
			}
			if batch != nil && len(s.unsaved) >= savedEvery {
				// A long group is saved in parts, so that what this
				// side keeps of it does not grow with its files, and
				// its sender hears of them (savedAck) and keeps nothing
				// either.
				err := s.saveBatch(batch)
				if err != nil && partErr == nil {
					partErr = err
				}
				batch.BeginBatch()
				s.batching = true
				if partErr == nil && reply == nil && s.neg.peerKerf && s.cfg.Reliable {
					reply = savedAck
				}
			}
			s.cancelFile.Store(false)
			if err := s.ackRecv(p.Seq, reply); err != nil {
				return err
			}
		case 'B':
			if batch != nil {
				err := s.saveBatch(batch)
				batch = nil
				if err == nil {
					err = partErr
				}
				if err != nil {
					return &groupSaveError{fmt.Errorf("kermit: %w", err)}
				}
			}
			s.finishDirs(store)
			if s.neg.peerKerf && len(p.Data) > 0 {
				s.unsentOf(p.Data)
			}
			if err := s.ackRecv(p.Seq, nil); err != nil {
				return err
			}
			s.ended = true
			if s.cancelGroup.Load() {
				// Over with its B: no E after it (endedError).
				return &endedError{ErrCanceled}
			}
			return nil
		default:
			return fmt.Errorf("%w: unexpected %q packet while receiving", ErrProtocol, p.Type)
		}
	}
}

// handleAttrs merges an A packet and returns the ACK data: accept,
// refuse with reasons, or accept with the recovery point.
func (s *Session) handleAttrs(cur *recvFile, data []byte) ([]byte, error) {
	if err := cur.attrs.Parse(data); err != nil {
		return nil, fmt.Errorf("%w: attributes of %s: %v", ErrProtocol, cur.name, err)
	}
	if s.neg.peerKerf {
		for _, x := range cur.attrs.Extra {
			if x.Tag == framing.AttrLength {
				// A kerf sender writes a length it has: one that does
				// not read is no file's (QA aq: taken as none, the file
				// was stored, exit 0, whatever came).
				return nil, fmt.Errorf("%w: attributes of %s: length %q is not a number of bytes", ErrProtocol, cur.name, x.Value)
			}
		}
	}
	cur.haveAttr = true
	if cur.display != nil {
		return nil, nil
	}
	if t := cur.attrs.Type; t != "" && cur.display == nil {
		cur.text = t[0] == 'A'
	}
	if cur.text && !cur.refused && cur.inc != nil {
		latin1, err := textCharset(cur.attrs.Encoding)
		if err != nil {
			cur.inc.Abort(true) // a partial already there is kept
			return s.refuse(cur, "*", err)
		}
		cur.latin1 = latin1
	}
	if cur.text && s.dualActive() && !cur.refused && cur.inc != nil && !cur.expected {
		// The data channel carries a file's bytes at their offsets:
		// no line ends can be converted there, and stored as sent the
		// same A would make another file than in D packets (QA am F4).
		cur.inc.Abort(true)
		return s.refuse(cur, `"`, errors.New("a text-mode file (type AMJ) goes in D packets, on a session without the data channel: the data channel carries files as binary (B8)"))
	}
	if cur.refused || cur.inc == nil {
		// "+" (disposition: it cannot be stored as asked), not "?": C-Kermit
		// counts a file refused for its name (or date) as sent on purpose,
		// status 0, as for its own SET FILE COLLISION DISCARD, and every
		// other reason as failed (ckcpro.w, <sseof>Y).
		return s.refuse(cur, "+", cur.why)
	}
	reply := framing.AttrReply{Accept: true, ResumeAt: -1}
	var ext []byte
	disp := cur.attrs.Disposition
	recovery := strings.HasPrefix(disp, "R")
	if disp != "" && !recovery && disp != dispositionUnlessThere && !cur.expected {
		// Print, mail, submit as a job…: not stored as a file of its
		// name in place of the user's (QA s: C-Kermit's REMOTE PRINT
		// replaced a file, and it said the print was done).
		cur.inc.Abort(true) // a partial already there is kept
		return s.refuse(cur, "+", dispositionError(disp))
	}
	// '=' for a text file is only "store it": no kerf sends it so.
	unlessThere := disp == dispositionUnlessThere && s.neg.unlessThere && !cur.text
	if (recovery || unlessThere) && !cur.expected {
		if cur.text {
			// Refused, and not stored whatever the sender does next (a
			// sender that went on with its data had it stored). A
			// partial already there (of a binary transfer) is kept.
			cur.inc.Abort(true)
			return s.refuse(cur, "+", errTextRecovery)
		}
		if (s.neg.skipWhole || recovery) && s.alreadyThere(cur) && s.keepExisting(cur) {
			// A resumed tree re-sends no file that arrived whole before:
			// the file there is kept as it is, with the sender's
			// permissions if it gave them.
			ino := s.inoField(cur)
			cur.inc.Abort(false)
			cur.inc, cur.refused, cur.why = nil, true, ErrAlreadyThere
			if s.abandoned[cur.name] {
				// Told failed before (its group's save, a restarted
				// sender), and found whole now: the failure is
				// withdrawn, as when it is received whole again.
				delete(s.abandoned, cur.name)
				s.event(Event{Kind: FileDone, Name: cur.name, Size: cur.attrs.Length, Again: true})
			} else {
				s.event(Event{Kind: FileSkipped, Name: cur.name, Err: ErrAlreadyThere, Size: cur.attrs.Length})
			}
			if !s.neg.skipWhole {
				// A classic Kermit's RESEND or REGET: it is asked to go
				// on from the file's end, so that nothing is sent again
				// (a C-Kermit receiver answers so too).
				return framing.AttrReply{Accept: true, ResumeAt: cur.attrs.Length}.Marshal(), nil
			}
			if unlessThere && s.dualActive() && cur.attrs.Length >= 0 {
				// Its data comes all the same: taken and thrown away.
				if err := s.data.Expect(cur.id, discardAt{}, 0, cur.attrs.Length); err != nil {
					return nil, err
				}
				cur.expected = true
			}
			return append(framing.AttrReply{Accept: false, Reasons: reasonAlreadyThere + ino, ResumeAt: -1}.Marshal(), s.refusalText(ErrAlreadyThere)...), nil
		}
	}
	if sh, ok := cur.inc.(SizeHinted); ok && !cur.expected {
		var err error
		s.working(func() { err = sh.WillHold(cur.attrs.Length, recovery) })
		if err != nil {
			cur.inc.Abort(true) // a partial already there is kept
			return s.refuse(cur, "+", err)
		}
	}
	var kept []framing.KeptRange
	if recovery && !cur.expected {
		var size int64
		var crc uint32
		var err error
		if kp, ok := cur.inc.(KeptPartial); ok {
			s.working(func() { size, crc, kept, err = kp.PartialKept(s.keptRoom()) })
		} else {
			s.working(func() { size, crc, err = cur.inc.Partial() })
		}
		if err != nil {
			return nil, fmt.Errorf("kermit: recovery of %s: %w", cur.name, err)
		}
		if cur.attrs.Length >= 0 && (size > cur.attrs.Length || len(kept) > 0 && kept[len(kept)-1].End > cur.attrs.Length) {
			size, kept = 0, nil // no part of this file (Truncate(0) below)
		}
		var check int64 // what the sender reads to check what is here
		if size > 0 {
			reply.ResumeAt = size
			cur.off, cur.start, cur.prefix = size, size, crc
			h := strconv.FormatUint(uint64(crc), 16)
			ext = append([]byte{'c', byte(32 + len(h))}, h...)
			check = size
		} else {
			reply.ResumeAt = 0
		}
		for _, k := range kept {
			ext = framing.AppendKeptRange(ext, k)
			check += k.End - k.Off
			cur.kept += k.End - k.Off
		}
		if check > 0 {
			s.peerHashes(check, -1) // the sender checks the prefix and ranges against its file
		}
		// Dealt with, even from 0: the ranges kept are the file's now
		// (no Truncate(0) below).
		cur.prepared = cur.prepared || len(kept) > 0
	}
	need, tag := cur.attrs.Length, "1"
	if need < 0 && cur.attrs.LengthK > 0 {
		// Only the size in K (a Kermit that sends no exact length):
		// as good for the room, within a K (QA r: a terabyte so
		// announced was taken, to fill the disk).
		need, tag = (cur.attrs.LengthK-1)*1024+1, "!"
	}
	if rc, ok := cur.inc.(RoomChecker); ok && need > cur.start+cur.kept && !cur.text {
		// (The ranges kept are on the disk already.)
		if err := rc.Room(need - cur.start - cur.kept); err != nil {
			cur.inc.Abort(cur.start > 0 || cur.kept > 0) // a kept partial stays for later
			return s.refuse(cur, tag, err)
		}
	}
	if cur.start == 0 && !cur.prepared {
		if err := cur.inc.Truncate(0); err != nil {
			// This file cannot be begun (a store that cannot take
			// back what it has, as standard output): refused, not the
			// session lost, which would be dialled again to the same
			// end.
			cur.inc.Abort(true)
			return s.refuse(cur, "+", fmt.Errorf("preparing %s: %w", cur.name, err))
		}
	}
	cur.prepared = true
	s.event(Event{Kind: FileStart, Name: cur.name, Size: cur.attrs.Length, Offset: cur.start})
	if s.dualActive() && !cur.expected {
		if cur.attrs.Length < 0 {
			return nil, fmt.Errorf("%w: dual-channel file %s has no length", ErrProtocol, cur.name)
		}
		var dst io.WriterAt = cur.inc
		if s.cfg.Events != nil {
			var kept *atomic.Int64
			if cur.kept > 0 {
				kept = new(atomic.Int64)
				kept.Store(cur.kept)
			}
			report, flush := s.progressKept(cur.name, cur.attrs.Length, cur.start, false, kept)
			dst, cur.flushProgress = &progressWriterAt{w: cur.inc, report: report}, flush
		}
		if err := s.settleBelow(cur.id); err != nil {
			return nil, err
		}
		var err error
		if len(kept) > 0 {
			// keptRoom gave some: the path keeps them (DataKeeper).
			err = s.data.(DataKeeper).ExpectKept(cur.id, dst, cur.start, cur.attrs.Length-cur.start, kept)
			if pw, ok := dst.(*progressWriterAt); ok {
				pw.report(cur.kept) // on the disk already
			}
		} else {
			err = s.data.Expect(cur.id, dst, cur.start, cur.attrs.Length-cur.start)
		}
		// Expected when the path has failed too: it still writes the
		// blocks that came before this A, and the kept partial's
		// Abandon counts them. (Not for another error, a file id used
		// twice: Abandon would count another file's.)
		cur.expected = err == nil || s.dataFailed()
		if err != nil {
			return nil, err
		}
	}
	return append(reply.Marshal(), ext...), nil
}

// keptRoom is how many kept ranges a recovery's ACK may list: none
// unless both sides take them over a data path that keeps them, and no
// more than fit in one packet beside the recovery point and its CRC.
func (s *Session) keptRoom() int {
	if _, ok := s.data.(DataKeeper); !ok || !s.neg.keptRanges || !s.dualActive() {
		return 0
	}
	const pointAndCRC = 2 + 19 + 2 + 8
	return max(0, min(64, (s.neg.maxData-pointAndCRC)/framing.KeptRangeLen))
}

// refuse answers cur's A with a refusal for reason (the attribute's tag)
// and why (told to a kerf peer in words). A file refused here, not at
// its F, is reported now; its Incoming, if any, the caller has ended.
func (s *Session) refuse(cur *recvFile, reason string, why error) ([]byte, error) {
	if !cur.refused {
		s.cfg.Log.Info("refusing file", "name", cur.name, "err", why)
		cur.inc, cur.refused, cur.why = nil, true, why
		s.event(Event{Kind: FileFailed, Name: cur.name, Err: why})
	}
	if s.dualActive() && !cur.expected && cur.attrs.Length >= 0 {
		// The sender may already be streaming this file's blocks: take
		// them and throw them away rather than leave them parked.
		if err := s.settleBelow(cur.id); err != nil {
			return nil, err
		}
		if err := s.data.Expect(cur.id, discardAt{}, 0, cur.attrs.Length); err != nil {
			return nil, err
		}
		cur.expected = true
	}
	return append(framing.AttrReply{Accept: false, Reasons: reason, ResumeAt: -1}.Marshal(), s.refusalText(why)...), nil
}

// makeDir makes the directory cur a kerf peer sent, in a store that can
// (DirReceiver; other stores skip it), with the attributes of its A if
// any, and keeps those for finishDirs. A failure is reported here and
// told to the sender in the Z's ACK.
func (s *Session) makeDir(store Store, cur *recvFile) {
	name := strings.TrimSuffix(cur.name, "/")
	perm, havePerm := fs.FileMode(0), false
	if cur.haveAttr && cur.attrs.Perm >= 0 {
		perm, havePerm = fs.FileMode(cur.attrs.Perm)&fs.ModePerm, true
		if cur.attrs.Perm&stickyBit != 0 {
			perm |= fs.ModeSticky
		}
	}
	var err error
	switch st := store.(type) {
	case DirAttrReceiver:
		if err = st.MakeDir(name, perm, havePerm); err == nil && cur.haveAttr {
			s.dirsToFinish = append(s.dirsToFinish, dirAttrs{name: name, perm: perm, havePerm: havePerm, mtime: cur.attrs.ModTime})
		}
	case DirReceiver:
		err = st.ReceiveDir(name)
	}
	if err != nil {
		s.cfg.Log.Info("cannot make directory", "name", cur.name, "err", err)
		s.event(Event{Kind: FileFailed, Name: cur.name, Err: err})
		cur.why = err
	}
}

// dirAttrs is a received directory's attributes, given it at the group's
// end (finishDirs): its files, renamed into it, would change its time,
// and its own permissions might not let them in.
type dirAttrs struct {
	name     string
	perm     fs.FileMode
	havePerm bool
	mtime    time.Time
}

// finishDirs gives the group's directories their attributes, the last
// received first: a tree's directories come before what is in them, so
// the deepest are done before the directories above them.
func (s *Session) finishDirs(store Store) {
	if s.holdDirs != nil {
		for _, d := range s.dirsToFinish {
			s.holdDirs.hold(d)
		}
		s.dirsToFinish = s.dirsToFinish[:0]
		return
	}
	st, ok := store.(DirAttrReceiver)
	for i := len(s.dirsToFinish) - 1; ok && i >= 0; i-- {
		d := s.dirsToFinish[i]
		if err := st.SetDirAttrs(d.name, d.perm, d.havePerm, d.mtime); err != nil {
			s.cfg.Log.Warn("cannot set the directory's attributes", "name", d.name, "err", err)
			s.event(Event{Kind: FileFailed, Name: d.name + "/", Err: err})
		}
	}
	s.dirsToFinish = s.dirsToFinish[:0]
}

// refusalText is kerf's addition to a refusing A ACK for a kerf peer: an
// "m" field (tag, tochar(length), encoded text; several for a long
// text, each of at most 94 bytes) after the one reason tag,
// saying why in words, since Kermit's reason tags only say which
// attribute. Other Kermits get the tags alone.
func (s *Session) refusalText(why error) []byte {
	if why == nil || !s.neg.peerKerf {
		return nil
	}
	// In "m" fields of at most 94 bytes each (the most tochar can
	// count), as many as the packet has room for, up to four: one cut
	// the hint at the end of a long reason ("remove it to receive the
	// file"). Each is cut at a character's start and decodes alone.
	msg := s.concealed([]byte(why.Error()))
	room := min(s.neg.maxData-16, 4*(2+94))
	var out []byte
	for len(msg) > 0 && room > 2 {
		enc, n := s.fitPrefix(msg, min(94, room-2))
		if n == 0 || len(enc) == 0 {
			break
		}
		out = append(append(out, 'm', byte(32+len(enc))), enc...)
		room -= 2 + len(enc)
		msg = msg[n:]
	}
	return out
}

// keepExisting gives the file a resume found whole the sender's
// permission bits, if it gave them, and reports whether it is kept so.
// Where the mode cannot be changed in place (a file with other links,
// which ExistingKeeper leaves alone), the file is received again, and
// renamed over the name as any replaced file is: the mode arrives, and
// the other names keep the file they had. (QA: the mode was left and
// the file counted as there, so a file made private stayed readable.)
func (s *Session) keepExisting(cur *recvFile) bool {
	k, ok := cur.inc.(ExistingKeeper)
	if !ok || cur.attrs.Perm < 0 {
		return true
	}
	if err := k.KeepExisting(fs.FileMode(cur.attrs.Perm) & fs.ModePerm); err != nil {
		s.cfg.Log.Info("a file already there is received again: its mode could not be set in place", "name", cur.name, "err", err)
		return false
	}
	return true
}

// AnswerLateRepeats keeps answering repeats of the group's packets (the
// B, or a Z or data packet a sender sends again before its B) for a
// while after a receive that ends the command, where the line damaged
// packets during it: their ACKs may be lost too, and a sender that
// never hears them sends again and again and fails, its file delivered
// (QA: lineem at BER 3e-4, exit 4 after 87 s). It returns once the
// line is quiet for one and a half of the sender's timeout (15 s at
// most; at once on a clean line, a reliable link, or after no B), or
// when the sender begins something else, which is kept for the next
// read.
func (s *Session) AnswerLateRepeats(ctx context.Context) {
	st := s.stats
	if s.cfg.Reliable || !s.ended || st.BadPackets+st.NAKsSent+st.Timeouts == 0 {
		return
	}
	// The sender waits for an answer as long as this side asked in its
	// Send-Init (TIME: cfg.Timeout) before it sends again; a kerf sender
	// less, its timer following the round trip.
	quiet := min(s.cfg.Timeout*3/2, 15*time.Second)
	// However the line goes on (a peer repeating for ever, noise that
	// looks like packets), the command ends within a few quiet spells.
	deadline := time.Now().Add(4 * quiet)
	for time.Now().Before(deadline) {
		p, ok, err := s.readWatching(ctx, quiet, watchNone)
		switch {
		case err != nil || !ok:
			return
		case p.bad:
			continue
		case strings.IndexByte("FAXDZB", p.Type) >= 0 && s.rw.hasAck[p.Seq]:
			// A packet of the group just ended, again: its ACK was lost
			// (the B's; or a Z's or a data packet's, which a sender
			// sends again before its B).
			s.cfg.Log.Debug("a packet of the group again: its ACK was lost", "seq", p.Seq, "type", string(p.Type))
			if err := s.repeatAck(p.Seq); err != nil {
				return
			}
		default:
			s.again = &p
			return
		}
	}
}

// ErrPartialKept is part of a cut-off received file's error when what
// came of it is kept for a resume (not when the store keeps nothing: a
// small file kept unnamed, the null device).
var ErrPartialKept = errors.New("not received whole, what came is kept for --resume (or a Kermit sender's RESEND) to go on from")

// NothingKept is an optional extension of Incoming: one that keeps
// nothing of what it is given (the null device) has no partial for a
// resume to go on from.
type NothingKept interface {
	KeepsNothing() bool
}

// ExistingFile is an optional extension of Incoming: the file already
// under the final name, if any (a regular file).
type ExistingFile interface {
	Existing() (size int64, mod time.Time, ok bool)
}

// ExistingInode is an optional extension of an ExistingFile: the inode
// number of the file Existing found (0 if unknown), which a kerf
// receiver gives with "already there" so that a sender removing its
// files can tell its very file, seen through a shared file system
// (capas4Inodes).
type ExistingInode interface {
	ExistingIno() uint64
}

// ExistingKeeper is an optional extension of an ExistingFile: a file a
// resume finds whole is not sent again, but takes the sender's
// permission bits (a mode changed since still arrives, as with rsync
// -a).
type ExistingKeeper interface {
	KeepExisting(perm fs.FileMode) error
}

// peerLiteralNames reports whether the classic peer is a Unix Kermit
// (system ID "U1", as kerf's own), whose names are taken as they are:
// C-Kermit's receiver does so between like systems (its automatic
// transfer mode), and so stores even G-Kermit's DATA.BIN as it came
// (seen with C-Kermit 10 and G-Kermit 2.01 over a line). A README from a
// C-Kermit server was stored as readme (QA). (WHATAMI's file-name bit
// cannot tell: C-Kermit sets it when it converts, G-Kermit when it does
// not; framing.WhatLiteral.)
func (s *Session) peerLiteralNames() bool { return s.neg.peer.SysID == "U1" }

// convertedName is a classic Kermit peer's file name as kerf stores it
// when the peer is not a Unix Kermit (peerLiteralNames): a name whose
// letters are all capitals comes from a system whose names are (MS-DOS
// Kermit's DATA.BIN) or from a sender that converts names to Kermit's
// "normal form", and is lowered, as C-Kermit's receiver does between
// unlike systems (SET FILE NAMES CONVERTED); a name with any small
// letter is kept as it is. Only ASCII letters count and change, byte by
// byte, as in C-Kermit's C locale: other bytes (UTF-8 or not) are left
// alone. A kerf peer's names are always literal.
func convertedName(name string) string {
	upper := false
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z':
			return name
		case 'A' <= c && c <= 'Z':
			upper = true
		}
	}
	if !upper {
		return name
	}
	b := []byte(name)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// errLengthMismatch is why a file whose data was not the length its
// sender announced failed: the peer's doing, which dialling it again
// would not mend (lostBy; QA: a server sending more than it announced
// was dialled again for two minutes).
var errLengthMismatch = errors.New("not the length announced")

// inoField is the field that follows "=" in an already-there refusal to
// a peer that takes inode numbers: 'i', its length, the inode number of
// the file there in decimal (protocol.md §6, item 8); "" otherwise.
func (s *Session) inoField(cur *recvFile) string {
	ei, ok := cur.inc.(ExistingInode)
	if !s.neg.inodes || !ok {
		return ""
	}
	ino := ei.ExistingIno()
	if ino == 0 {
		return ""
	}
	n := strconv.FormatUint(ino, 10)
	return "i" + string(rune(32+len(n))) + n
}

// inoOfAlreadyThere is the inode number an already-there refusal's
// reasons carry ("=i" and its field), or 0.
func inoOfAlreadyThere(reasons string) uint64 {
	f, ok := strings.CutPrefix(reasons, reasonAlreadyThere+"i")
	if !ok || len(f) < 1 {
		return 0
	}
	l := int(f[0]) - 32
	if l < 1 || l > 20 || 1+l > len(f) {
		return 0
	}
	ino, err := strconv.ParseUint(f[1:1+l], 10, 64)
	if err != nil {
		return 0
	}
	return ino
}

// ErrAlreadyThere is why a resumed file is not sent again: the receiver
// has it under its final name, with the sender's length and time.
var ErrAlreadyThere = errors.New("already there (same size and time)")

// errTextRecovery refuses a text-mode file sent for recovery: its bytes
// here are converted, so no offset in them stands for the sender's.
var errTextRecovery = errors.New("a text-mode file cannot be resumed (send it whole, or in binary mode)")

// ErrDisposition is why a file the sender asked to be printed, mailed
// or otherwise handled other than stored (the A packet's "+"
// disposition) is refused: a kerf receiver only stores files.
var ErrDisposition = errors.New("this receiver only stores files")

// dispositionError is ErrDisposition for the disposition d, in words.
func dispositionError(d string) error {
	what := fmt.Sprintf("disposition %q", d)
	switch d[0] {
	case 'M':
		what = "to be mailed"
		if to := d[1:]; to != "" {
			what += " to " + to
		}
	case 'P':
		what = "to be printed"
	case 'S':
		what = "to be submitted as a job"
	case 'O', 'T':
		what = "to be shown as a message"
	}
	return fmt.Errorf("the sender asked for the file %s: %w", what, ErrDisposition)
}

// reasonAlreadyThere is the refusal reason a kerf receiver gives a kerf
// sender asking for recovery of a file it has whole (not an attribute
// letter, so a classic Kermit reads it as an unknown reason).
const reasonAlreadyThere = "="

// alreadyThere reports whether the receiver has cur under its final name
// with the announced length and modification time (framing.SameModTime), as
// rsync's quick check decides.
func (s *Session) alreadyThere(cur *recvFile) bool {
	ex, ok := cur.inc.(ExistingFile)
	if !ok || cur.attrs.Length < 0 || cur.attrs.ModTime.IsZero() {
		return false
	}
	size, mod, ok := ex.Existing()
	return ok && size == cur.attrs.Length && framing.SameModTimeWithin(mod, cur.attrs.ModTime, s.cfg.ModifyWindow)
}

// ErrGroupSaveFailed matches (errors.Is) a Receive's error when the
// group ended but saving its files under their names failed for some:
// a kerf sender then sends those it cannot count as saved again, as a
// second group, to confirm them (SendParallelWith), which a receiver
// of one group should wait for.
var ErrGroupSaveFailed = errors.New("kermit: the group's files could not all be saved under their names")

// groupSaveError is a Receive's error at a group's end when saving its
// files failed: its words are the cause's.
type groupSaveError struct{ err error }

func (e *groupSaveError) Error() string        { return e.err.Error() }
func (e *groupSaveError) Unwrap() error        { return e.err }
func (e *groupSaveError) Is(target error) bool { return target == ErrGroupSaveFailed }

// ErrSaveFailed is why a received file that was done (verified) failed
// after all: it could not be saved under its name at the group's end.
var ErrSaveFailed = errors.New("not saved under its name")

// CutOffError is why a file failed when its group ended before the file
// did (the link lost, an E, a cancel): a receiver keeps what came for a
// resume, and a sender does not know what the receiver kept.
// SendParallel and GetParallel tell it from a file's own failure.
type CutOffError struct{ Err error }

func (e *CutOffError) Error() string { return e.Err.Error() }
func (e *CutOffError) Unwrap() error { return e.Err }

// writeData decodes one D packet into the current file.
func (s *Session) writeData(cur *recvFile, data []byte) error {
	buf, err := s.neg.in.Decode(s.decodeBuf[:0], data)
	if err != nil {
		return fmt.Errorf("%w: data of %s: %v", ErrProtocol, cur.name, err)
	}
	s.decodeBuf = buf
	if cur.refused || s.cancelFile.Load() || s.cancelGroup.Load() {
		return nil
	}
	if s.neg.fileCRC && cur.display == nil {
		// As it came, before text becomes local: what the sender's
		// CRC covers (its Z).
		cur.crc = framing.UpdateCRC32C(cur.crc, buf)
	}
	if cur.text {
		buf = cur.fromCanonical(buf)
	}
	overrun := cur.display == nil && !cur.text && cur.attrs.Length >= 0 && cur.off+int64(len(buf)) > cur.attrs.Length
	switch {
	case overrun && s.neg.peerKerf:
		// Not this file: a kerf sender sends a file that changed as it
		// read it again, or fails it (changedWhileSent); the Z fails
		// it (finishFile's length check). Counted, not written: what
		// is written cannot always be taken back (standard output: QA
		// aq, 100,000 bytes passed on for 10 announced).
		cur.off += int64(len(buf))
		return nil
	case overrun && (s.neg.check < 3 || s.cfg.Parity):
		// More than announced, checked only by a 6- or 12-bit sum: on
		// a noisy line a damaged repeat count passes it as easily as a
		// file that grew (QA: lineem at BER 1e-4, C-Kermit with block
		// check 1: 200,006 bytes of 200,000 stored, 174,615 of them
		// wrong; with block check 2, 200,001 stored, wrong from byte
		// 28,452). Not stored; the file is canceled at once (X in the
		// ACK), so that the sender counts it failed and goes on with
		// the next, where refusing it at its Z took an E, which ended
		// the batch. (Under a 16-bit CRC a file that grew is kept.)
		cur.overrun = fmt.Errorf("kermit: %s: more than the %d bytes announced came: with block check %d a damaged packet can pass unnoticed, so it is not stored (send it again with block check 3): %w", cur.name, cur.attrs.Length, s.neg.check, errLengthMismatch)
		if s.neg.check >= 3 {
			// Over a 7-bit line (parity), under any check: as likely
			// the sender coding 8-bit bytes in a way not agreed as a
			// file that grew (QA p: C-Kermit's SET TRANSFER
			// LOCKING-SHIFT FORCED, its SO and SI stored as data,
			// 16,895 bytes for 16,384, and told done).
			cur.overrun = fmt.Errorf("kermit: %s: more than the %d bytes announced came over a 7-bit line (parity): not stored, since the sender may be coding 8-bit bytes in a way not agreed (locking shifts: SET TRANSFER LOCKING-SHIFT OFF there), or the file grew while it was sent: %w", cur.name, cur.attrs.Length, errLengthMismatch)
		}
		s.cancelFile.Store(true)
		return nil
	}
	if cur.display == nil && !cur.prepared {
		// No attributes told us about recovery: start the file afresh.
		if err := cur.inc.Truncate(0); err != nil {
			return fmt.Errorf("kermit: preparing %s: %w", cur.name, err)
		}
		cur.prepared = true
	}
	if cur.display != nil {
		_, err := cur.display.Write(buf)
		return err
	}
	if _, err := cur.inc.WriteAt(buf, cur.off); err != nil {
		err = fmt.Errorf("kermit: writing %s: %w", cur.name, err)
		if !s.neg.notStored {
			return err
		}
		// The disk full, say: this file fails, not the group, as on the
		// data channel (QA ar: in band, one failed write ended the
		// transfer, and a thousand files saved before it were told
		// failed). The sender is told to stop sending it (X), and the
		// Z's answer says why; the partial is kept for a resume.
		cur.writeErr = err
		s.cancelFile.Store(true)
		return nil
	}
	cur.off += int64(len(buf))
	if s.cfg.Events != nil {
		s.event(Event{Kind: FileProgress, Name: cur.name, Size: cur.attrs.Length, Bytes: cur.off - cur.start, Offset: cur.start})
	}
	return nil
}

// textCharset says how a text file whose transfer character set is enc
// (the '*' attribute) is stored: as it comes (none, transparent, ASCII or
// UTF-8, kerf's own text character set), converted from Latin-1, or
// refused (any other set, which kerf does not translate; C-Kermit counts
// a refusal for the character set as a failure, and can send the file
// in UTF-8 or transparent instead).
func textCharset(enc string) (latin1 bool, err error) {
	switch strings.ReplaceAll(enc, " ", "") {
	case "", "A", "CI196", "CI190":
		return false, nil
	case "CI6/100", "CI2/100", "CI6/204": // Latin-1, as C-Kermit reads them (ckuxla.c tcsinfo, ckcfn3.c)
		return true, nil
	}
	return false, fmt.Errorf("transfer character set %q is not one kerf translates (send as UTF-8, Latin-1 or transparent)", enc)
}

// fromCanonical turns CRLF into LF, holding a trailing CR until the
// next packet shows what follows it, and Latin-1 into UTF-8 (cur.latin1).
func (cur *recvFile) fromCanonical(b []byte) []byte {
	n := len(b) + 1
	if cur.latin1 {
		n += len(b)
	}
	out := make([]byte, 0, n)
	if cur.pendCR {
		if len(b) == 0 || b[0] != '\n' {
			out = append(out, '\r')
		}
		cur.pendCR = false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\r' {
			if i+1 == len(b) {
				cur.pendCR = true
				continue
			}
			if b[i+1] == '\n' {
				continue
			}
		}
		if cur.latin1 && c >= utf8.RuneSelf {
			out = utf8.AppendRune(out, rune(c))
			continue
		}
		out = append(out, c)
	}
	return out
}

// sendersReason is the reason a kerf sender gives in a discarding Z
// ("D" and its words) for not sending a file.
func (s *Session) sendersReason(zdata []byte) (string, bool) {
	if len(zdata) < 2 || zdata[0] != 'D' || !s.neg.peerKerf {
		return "", false
	}
	text, err := s.decodeString(zdata[1:])
	return text, err == nil
}

// notSentError is a kerf sender's reason for not sending a file, as
// this side reports it: passed over (no failure) or not sent.
func notSentError(text string) error {
	if rest, ok := strings.CutPrefix(text, passedOverPrefix); ok {
		return fmt.Errorf("%w by the sender: %s", ErrPassedOver, rest)
	}
	return fmt.Errorf("not sent by the peer: %s", text)
}

// finishFile handles Z: discard, or verify and commit.
func (s *Session) finishFile(ctx context.Context, cur *recvFile, zdata []byte) error {
	if sink, ok := cur.display.(*skipSink); ok && (len(zdata) == 0 || zdata[0] != 'D') {
		sink.commit()
	}
	if cur.display != nil || cur.dir {
		return nil
	}
	if cur.pendCR {
		cur.pendCR = false
		if cur.inc != nil {
			cur.inc.WriteAt([]byte{'\r'}, cur.off)
			cur.off++
		}
	}
	discard := len(zdata) > 0 && zdata[0] == 'D'
	if cur.deferred {
		why := cur.why
		if text, ok := s.sendersReason(zdata); ok {
			why = notSentError(text)
		}
		s.event(Event{Kind: FileFailed, Name: cur.name, Err: why})
		cur.deferred = false
	}
	if cur.refused || cur.inc == nil {
		if cur.expected && !discard {
			if !s.data.Ready(cur.id) {
				s.flush()
			}
			waited := s.waitingOnPeer()
			_, err := s.data.Wait(ctx, cur.id)
			waited()
			if err != nil {
				return fmt.Errorf("kermit: data of refused %s: %w", cur.name, err)
			}
		} else if cur.expected {
			// Let go (its data may still come, and is dropped), so that
			// the data path forgets it (datachan's forgetWaitedLocked).
			s.data.Abandon(cur.id)
		}
		return nil
	}
	inc := cur.inc
	cur.inc = nil
	done := Event{Kind: FileDone, Name: cur.name, Path: inc.Name()}
	if s.abandoned[cur.name] {
		// Told failed when its sender restarted, and received whole
		// since (QA: exit 4 after a RESEND completed it).
		done.Again = true
		delete(s.abandoned, cur.name)
	}
	if cur.writeErr == nil && discard && cur.expected && s.dualActive() && s.neg.notStored {
		// Its sender was stopped on the data path (datachan.WithStops)
		// because this side could not write it: the Z's answer says
		// why, as a Wait would have.
		if ff, ok := s.data.(DataFileFailure); ok {
			if err := ff.FileErr(cur.id); err != nil {
				cur.writeErr = fmt.Errorf("kermit: data of %s: %w", cur.name, err)
				s.cfg.Log.Info("file not stored; its sender was stopped, not sent the rest", "name", cur.name, "err", err)
			}
		}
	}
	if cur.writeErr != nil {
		if cur.text || cur.attrs.Length < 0 && s.neg.peerKerf {
			// (Text, or a stream of no announced length: no resume can
			// go on with it, as when cut off.)
			inc.Abort(false)
			return &notStoredError{fmt.Errorf("%w (nothing of it is kept: it cannot be resumed)", cur.writeErr)}
		}
		return &notStoredError{s.keptSaid(cur, inc, cur.writeErr)}
	}
	if discard || s.cancelFile.Load() || s.cancelGroup.Load() {
		// A canceled file, or a partial the sender found is not a prefix
		// of its file, is not worth keeping. Its data may still be
		// arriving: no block is written once the file is let go.
		if cur.expected && s.dualActive() {
			s.data.Abandon(cur.id)
		}
		inc.Abort(false)
		if cur.overrun != nil {
			s.event(Event{Kind: FileFailed, Name: cur.name, Err: cur.overrun})
			return nil
		}
		why := ErrCanceled
		if text, ok := s.sendersReason(zdata); ok {
			if text == errRestart.Error() {
				// It sends the file again, whole, next.
				s.cfg.Log.Info("partial file differs from the sender's, receiving it whole", "name", cur.name)
				return nil
			}
			why = notSentError(text)
		}
		s.event(Event{Kind: FileSkipped, Name: cur.name, Err: why})
		return nil
	}
	if s.dualActive() && cur.expected {
		if !s.data.Ready(cur.id) {
			// The sender may be waiting for our ACKs before it sends
			// the rest: write them out before blocking.
			if err := s.flush(); err != nil {
				s.keepPartial(cur, inc)
				return err
			}
		}
		waited := s.waitingOnPeer()
		crc, err := s.data.Wait(ctx, cur.id)
		waited()
		if err != nil {
			if s.neg.notStored && fileOnly(err) {
				// The disk filled, say: this file failed, not the path.
				return &notStoredError{s.keptSaid(cur, inc, fmt.Errorf("kermit: data of %s: %w", cur.name, err))}
			}
			s.keepPartial(cur, inc)
			return s.peerReason(ctx, fmt.Errorf("kermit: data of %s: %w", cur.name, err))
		}
		whole := wholeCRC(cur.prefix, crc, cur.start, cur.attrs.Length-cur.start)
		if len(zdata) < 2 || zdata[0] != 'C' {
			s.keepPartial(cur, inc)
			return fmt.Errorf("%w: Z packet for %s carries no checksum", ErrProtocol, cur.name)
		}
		want, err := strconv.ParseUint(string(zdata[1:]), 16, 32)
		if err != nil {
			// Not a CRC at all: the peer's fault, not the file's
			// (QA am: said to have changed while it was sent).
			s.keepPartial(cur, inc)
			return fmt.Errorf("%w: Z packet for %s: bad CRC-32C %q (hexadecimal digits expected)", ErrProtocol, cur.name, zdata[1:])
		}
		if uint32(want) != whole {
			inc.Abort(false)
			err := fmt.Errorf("kermit: %s: whole-file CRC-32C mismatch (sender %s, received %08x): changed while it was sent?", cur.name, zdata[1:], whole)
			if s.neg.notStored {
				// Every block checked and the whole did not: the file
				// changed after the sender's last look at it (a block
				// read again for a resend, or sent with sendfile from
				// pages written since). This file fails, not the
				// session.
				return &notStoredError{err}
			}
			return err
		}
		cur.off = cur.attrs.Length
		done.CRC32C = whole
	} else if whole, checked, err := s.checkFileCRC(cur, zdata); err != nil {
		inc.Abort(false) // where the damage is is not known
		if errors.Is(err, ErrProtocol) {
			return err
		}
		s.abandon(cur.name) // its sender sends it again
		return &notStoredError{err}
	} else if checked && !cur.text {
		// In packets, checked: the file's CRC-32C, for its file_done
		// as on the data channel.
		done.CRC32C = whole
	}
	// (On the data path Wait had it whole: cur.off is its length.)
	switch {
	case !cur.text && cur.attrs.Length >= 0 && (cur.off < cur.attrs.Length || cur.off > cur.attrs.Length && s.neg.peerKerf):
		// Short, or long from a kerf peer (one from before
		// changedWhileSent sends a changed file whole): not this file.
		// (Long from a classic peer under a weak check or over parity
		// was canceled as it overran: writeData.)
		err := fmt.Errorf("kermit: %s: received %d bytes, sender announced %d: %w", cur.name, cur.off, cur.attrs.Length, errLengthMismatch)
		// What came is no prefix to resume from: a file cut short as it
		// was read, or C-Kermit's PSEND, which sends a file's tail from
		// an offset under the whole length (QA s: kept as a partial,
		// a RESEND then "completed" it into the wrong bytes).
		inc.Abort(false)
		if s.neg.notStored {
			// This file, not the rest of the group (QA: an in-band
			// /proc file, announced 0 bytes, ended the transfer).
			return &notStoredError{err}
		}
		return err
	case !cur.text && cur.attrs.Length >= 0 && cur.off > cur.attrs.Length:
		// A file that grew while a classic Kermit sent it (a log being
		// written): every byte it sent arrived checked, and it says the
		// file ended, so it is kept, as C-Kermit keeps it. (A kerf
		// sender discards such a file itself: changedWhileSent.)
		s.cfg.Log.Warn("the sender sent more than it announced (the file grew while it was sent?)",
			"name", cur.name, "announced", cur.attrs.Length, "received", cur.off)
	}
	// The sender's permission bits, 000 included; 0644 when it sent none.
	perm := defaultPerm
	if cur.attrs.Perm >= 0 {
		perm = fs.FileMode(cur.attrs.Perm) & fs.ModePerm
	}
	var err error
	s.working(func() { err = inc.Commit(cur.attrs.ModTime, perm) })
	if err != nil {
		inc.Abort(true)
		err = fmt.Errorf("kermit: completing %s: %w", cur.name, err)
		if s.neg.notStored {
			// The rename failed, say (a directory made read-only
			// meanwhile): this file, not the session.
			return &notStoredError{err}
		}
		return err
	}
	s.stats.FileBytes += cur.off - cur.start - cur.kept
	done.Size, done.Bytes, done.Offset, done.Kept = cur.attrs.Length, cur.off-cur.start, cur.start, cur.kept
	done.Duration = time.Since(cur.began)
	s.event(done)
	if s.batching {
		s.unsaved = append(s.unsaved, done)
	} else {
		done.Kind = FileSaved
		s.event(done)
	}
	return nil
}

// savedEvery is how many received files a group holds unsaved (under
// their temporary names, or renamed and not yet reported) before it
// saves them and reports them saved, without waiting for its end: a
// bound on what a group of a million files keeps, well above the
// groups a batch's flush is measured on.
var savedEvery = 4096

// savedAck is the data of a Z's ACK from a kerf receiver on a reliable
// link saying that every file whose Z it acknowledged so far, this one
// included, is saved under its name (protocol.md §5.5): the sender
// reports them saved (FileSaved) and forgets them. Any other kerf
// sender takes it as a plain ACK (only "N" says not stored).
var savedAck = []byte("S")

// savedChecker is an optional extension of a groupBatcher: whether the
// file it stored as name is durable under that name, after a batch
// whose flush failed (for some file, not necessarily this one).
type savedChecker interface {
	Saved(name string) bool
}

// saveBatch ends batch, saving its files under their names, and
// reports them (saved); its error is the save's.
func (s *Session) saveBatch(batch groupBatcher) error {
	var err error
	s.working(func() { err = batch.EndBatch() })
	s.saved(batch, err)
	return err
}

// saved reports the files of a batch as durable (FileSaved), or, when
// its flush failed (err), as failed, except those the store can tell
// were saved all the same.
func (s *Session) saved(batch groupBatcher, err error) {
	sc, _ := batch.(savedChecker)
	for _, e := range s.unsaved {
		e.Kind = FileSaved
		if err != nil && (sc == nil || !sc.Saved(e.Path)) {
			e.Kind, e.Err = FileFailed, fmt.Errorf("%w: %w", ErrSaveFailed, err)
			if s.neg.secondPass {
				// Its sender sends it again in a second pass: stored
				// then, the failure is withdrawn. (Only a sender that
				// said it sends one: a stale mark would withdraw a
				// later, unrelated failure; review 53.)
				s.abandon(e.Name)
			}
		}
		s.event(e)
	}
	s.unsaved = s.unsaved[:0]
	s.batching = false
}

// keptSaid keeps cur's partial (keepPartial) and returns why, saying
// so if something was kept: the sender hears that a resume goes on.
func (s *Session) keptSaid(cur *recvFile, inc Incoming, why error) error {
	if s.keepPartial(cur, inc) {
		return fmt.Errorf("%w; %w", why, ErrPartialKept)
	}
	return why
}

// keepPartial ends an interrupted file and keeps what it has for
// recovery. Data that came through the data path is cut to its gap-free
// prefix first: with several data connections blocks land out of order,
// and recovery resumes from the partial file's length.
func (s *Session) keepPartial(cur *recvFile, inc Incoming) (kept bool) {
	cur.cutOff = true
	size := cur.off
	if s.dualActive() && cur.expected {
		dk, ok1 := s.data.(DataKeeper)
		kp, ok2 := inc.(KeptPartial)
		var err error
		var prefix int64 // the data received without a gap
		if ok1 && ok2 {
			// What came past the prefix is kept too, for a resume
			// to send only the gaps (capas4KeptRanges).
			n, kept := dk.AbandonKept(cur.id)
			prefix = cur.start + n
			size, err = kp.KeepRanges(prefix, kept)
		} else {
			prefix = cur.start + s.data.Abandon(cur.id)
			size, err = prefix, inc.Truncate(prefix)
		}
		if err != nil {
			// Kept uncut: a resume finds where its data stops whole
			// again (the store records nothing of it then), and the
			// sender checks that prefix (QA aj: removed, a quota's
			// partial of 9 MiB was sent again from 0).
			s.cfg.Log.Warn("cutting partial file; kept as it is", "name", cur.name, "err", err)
			size = prefix
		}
	}
	inc.Abort(true)
	// An empty partial is not kept (filestore removes it), nor anything
	// by a store that keeps nothing: nothing for a resume to go on from
	// (review).
	nothing, _ := inc.(NothingKept)
	cur.partKept = size > 0 && (nothing == nil || !nothing.KeepsNothing())
	return cur.partKept
}

// countFileID takes the file id of an F or X: read is the reader's count
// less the copies the receive window dropped before it (0: none). On a
// reliable link that is the sender's count: those F and X packets
// read elsewhere (the rest of a group an E ended, still on its way,
// read in a server's command wait or before the next S) are counted
// too, and their blocks, which the sender sent, dropped. Counted here
// alone, the ids fell behind the sender's, and a second pass on the
// session took the first's parked blocks for its files (review 56b).
// On a line, where a packet may come twice, each F and X read here is
// the next id.
func (s *Session) countFileID(read uint32) {
	if !s.cfg.Reliable || read == 0 {
		s.recvFileID++
		return
	}
	if df, ok := s.data.(DataForsaker); ok {
		for id := s.recvFileID + 1; id < read; id++ {
			df.Forsake(id)
		}
	}
	s.recvFileID = read
}

// settleBelow tells a data path that takes it (DataSettler) that the
// files before id are settled: this side expects files in the order of
// their F and X packets, every one of them.
func (s *Session) settleBelow(id uint32) error {
	if ds, ok := s.data.(DataSettler); ok {
		if err := ds.SettleBelow(id); err != nil {
			return fmt.Errorf("%w: %w", ErrProtocol, err)
		}
	}
	return nil
}

// refusalAck is the data of a Z's ACK saying this side did not keep
// what the Z ended: "N" and why (the sender's zRefusal reads it).
func (s *Session) refusalAck(why error) []byte {
	return append([]byte{'N'}, s.fitText(why.Error(), s.neg.maxData-1)...)
}

// abandon notes a file told failed that its sender may well send again
// (a RESEND after a restart, a file failing its whole-file CRC): its
// FileDone then is Again, the failure withdrawn.
func (s *Session) abandon(name string) {
	if s.abandoned == nil {
		s.abandoned = map[string]bool{}
	}
	s.abandoned[name] = true
}

// reasonFileCRC begins the reason a receiver gives for a file whose data
// came in packets, each passing its block check, and whose whole did not
// pass the sender's CRC-32C (capas3FileCRC): the sender sends it again.
const reasonFileCRC = "whole-file CRC-32C mismatch"

// checkFileCRC checks a file received in packets against the CRC-32C a
// kerf sender ends its Z with (capas3FileCRC): the CRC when it matches,
// checked false when there is none to check (not agreed, a text file
// resumed, whose kept part is stored in local form), or an error.
func (s *Session) checkFileCRC(cur *recvFile, zdata []byte) (whole uint32, checked bool, err error) {
	if !s.neg.fileCRC || len(zdata) < 2 || zdata[0] != 'C' || cur.text && cur.start > 0 {
		return 0, false, nil
	}
	whole = wholeCRC(cur.prefix, cur.crc, cur.start, cur.off-cur.start) // (binary when resumed)
	want, err := strconv.ParseUint(string(zdata[1:]), 16, 32)
	if err != nil {
		return 0, false, fmt.Errorf("%w: Z packet for %s: bad CRC-32C %q", ErrProtocol, cur.name, zdata[1:])
	}
	if uint32(want) != whole {
		// (The same words each time: the file comes again, and a
		// reporter tells a failure once.)
		s.cfg.Log.Info("whole-file CRC-32C mismatch", "name", cur.name, "sender", fmt.Sprintf("%08x", want), "received", fmt.Sprintf("%08x", whole))
		return 0, false, fmt.Errorf("%s of %s: damage that passed the packets' block check; not stored (a kerf sender sends it again, twice at most)", reasonFileCRC, cur.name)
	}
	return whole, true, nil
}

// notStoredError is a received file this side could not store, whose
// sender takes an N in the Z's ACK (capas2NotStored): reported, and the
// session goes on.
type notStoredError struct{ err error }

func (e *notStoredError) Error() string { return e.err.Error() }
func (e *notStoredError) Unwrap() error { return e.err }

// fileOnly reports whether a data path's error concerns one file only
// (writing it failed), not the path: such an error has a method
// FileOnly() bool (datachan's file write errors).
func fileOnly(err error) bool {
	var fo interface{ FileOnly() bool }
	return errors.As(err, &fo) && fo.FileOnly()
}

// defaultPerm is the mode of a received file whose sender gave none.
const defaultPerm fs.FileMode = 0o644

// discardAt is where the bytes of a refused file go.
type discardAt struct{}

func (discardAt) WriteAt(b []byte, _ int64) (int, error) { return len(b), nil }

func (discardAt) SkipZerosAt(int64, int64) (bool, error) { return true, nil }

// unsentOf reports the files a kerf sender's B says it could not name
// (unnameableReport) as failed: they were in the group but never came.
func (s *Session) unsentOf(data []byte) {
	text, err := s.decodeString(data)
	if err != nil {
		return
	}
	lines := strings.Split(text, "\n")
	if lines[0] != unsentTag {
		return
	}
	for _, name := range lines[1:] {
		if name != "" {
			s.event(Event{Kind: FileFailed, Name: name, Err: ErrNameTooLong})
		}
	}
}
