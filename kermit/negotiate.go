package kermit

import (
	"time"

	"kerf/framing"
)

// capas2RawOK is a kerf bit in the second CAPAS byte: "I frame by length
// and accept any raw byte but the packet mark", which lets two kerf peers
// on a clean link skip control prefixing almost entirely.
const capas2RawOK = 4

// capas2SkipWhole is a kerf bit in the second CAPAS byte: "asked to
// recover a file I already have whole, I answer N= (already there), and
// as a sender I take N= so" (protocol.md §6). Only a peer that sets it
// gets N=: to any other a refusal is a file not transferred.
const capas2SkipWhole = 8

// capas2DirAttrs is a kerf bit in the second CAPAS byte: "I send every
// directory of a recursive transfer as an entry with its permissions and
// modification time, before what is in it, and as a receiver I give the
// directories those attributes once the group is in" (protocol.md §5.4).
// Without it only empty directories travel, as F and Z alone: a receiver
// from before it takes no A for a directory.
const capas2DirAttrs = 16

// capas3UnlessThere is a kerf bit in the third CAPAS byte: "as a
// receiver I take the disposition '=' (store the file unless I have it
// whole, then refuse it with N=, and discard its data); as a sender I
// send small files so when resuming" (protocol.md §6, item 6). A kerf
// from before it would store such a file again rather than skip it.
const capas3UnlessThere = 2

// capas3ListsTree is a kerf bit in the third CAPAS byte, set by a
// server: "I take REMOTE DIRECTORY with the second argument kerf-tree
// (the whole tree) or kerf-get/kerf-get-r (a GET's files), and a
// client's kerf-skip text before a GET" (protocol.md §6 item 7, §8):
// what a resuming send's and get's quick checks need
// (Session.SkipWhole, GetOptions.Skip). A server from before it would
// list one directory, whose names a client could take for others.
const capas3ListsTree = 4

// capas3SubSecond is a kerf bit in the third CAPAS byte: "I write the
// '#' date with its fraction of a second and read it so" (protocol.md
// §5.2): files and directories keep their modification times to the
// nanosecond, as rsync -a keeps them, where Kermit's dates stop at the
// second. A kerf from before it could not read such a date.
const capas3SubSecond = 8

// capas3PassedOver is a kerf bit in the third CAPAS byte: "as a
// receiver I take an announced file whose reason begins 'passed over: '
// (a FIFO, a link to a directory in the sender's walk) as skipped, not
// failed" (protocol.md §5.4). A kerf from before it would count such an
// announcement a failure, so it hears nothing of them, as before.
const capas3PassedOver = 16

// capas3FileCRC is a kerf bit in the third CAPAS byte: "sending in
// packets (no data channel), I end a file's Z with C and the CRC-32C of
// the whole file's data as it went, in the transfer's canonical form
// [0, length), as the dual channel's Z does; receiving, I check it, and
// a file that fails is not stored (capas2NotStored) and is sent again"
// (protocol.md §5.4). The block check a packet carries is 16 bits at
// most: on a line that damages thousands of packets a damaged one
// passes it now and then (1 run in 300 of TestSlippingLinkSeeds stored
// a wrong copy). A kerf from before it takes any Z data but D as the
// file complete, and gets no C. The last free bit of this byte.
const capas3FileCRC = 32

// capas2NotStored is a kerf bit in the second CAPAS byte: "as a
// receiver, when I cannot store a file whose data arrived (the disk
// filled, the rename failed), I keep its partial, answer its Z with an
// ACK of N and the reason and go on with the next file; as a sender I
// take such an ACK as the file not transferred" (protocol.md §5.4).
// Without it such a failure ends the session, since a sender from
// before it takes any ACK of Z for the file stored. The last free bit of
// this byte; a further one needs a third CAPAS byte.
const capas2NotStored = 32

// capas4Inodes is a kerf bit in the fourth CAPAS byte: "when I answer
// that I have a file already there (N= to its A), or list a tree or a
// GET's files, or send a kerf-skip text, I give each file's inode
// number; as a sender that removes what the receiver has
// (--remove-source-files), I keep a file whose inode number the
// receiver's copy has" (protocol.md §6, item 8). Two machines sharing a
// file system (NFS) see one file under one inode number; without it a
// resumed move from one to the other could remove the only copy, which
// the receiver had found "already there".
const capas4Inodes = 2

// capas4KeepRepeat is a kerf bit in the fourth CAPAS byte: "my link is a
// line, not TCP (Config.Reliable off): keep repeat compression between
// kerfs". With both bits set it stays on for binary files too, where
// kerfs turn it off (protocol.md §2.3): on a serial line a run of zeros
// (a disk image, a sparse file) costs its every byte in line time, and
// the escaping of '~' costs about 0.4% on random data (QA p: 100 KB of
// zeros took 9.1 s kerf to kerf, 1.4 s kerf to C-Kermit at 115,200 bps).
// A kerf from before it sets neither and decides as before, so both
// sides agree.
const capas4KeepRepeat = 4

// capas4SecondPass is a kerf bit in the fourth CAPAS byte: "as a
// receiver, after a group that failed while its files were saved under
// their names (an E at the B), I take the sender's second pass, which
// confirms them, resuming" (protocol.md §5.4). A server always has; a
// serial receiver of one group waits for it only since this bit, so a
// sender on a line (Config.Reliable off) sends it only to one that sets
// it: another would have ended, and the sender would retry its S to the
// retry limit (the review).
const capas4SecondPass = 8

// capas4KeptRanges is a kerf bit in the fourth CAPAS byte: "as a
// receiver resuming a file over the data channel, I may list in the ACK
// to its A the ranges I hold past my recovery point ('k' fields); as a
// sender I then send only the gaps" (protocol.md §6). After a data
// connection stalled, the blocks the others carried past its gap are
// not sent again (QA y: 72-87% of a 200 MB file was).
const capas4KeptRanges = 16

// negotiated is what both sides agreed in the Send-Init exchange.
type negotiated struct {
	check     framing.CheckType
	window    int
	maxData   int // most encoded data bytes in one outgoing packet
	shortData int // most in one outgoing short (not long) packet
	long      bool
	attrs     bool
	resend    bool
	streaming bool
	dual      bool
	peerKerf  bool
	skipWhole bool // both take N= (already there) for a resumed file
	// unlessThere: both take the disposition '=' (capas3UnlessThere).
	unlessThere bool
	subSecond   bool            // '#' dates to the nanosecond (capas3SubSecond)
	passedOver  bool            // entries passed over are announced (capas3PassedOver)
	dirAttrs    bool            // directories travel with attributes (capas2DirAttrs)
	notStored   bool            // a file the receiver could not store is an N in the Z's ACK (capas2NotStored)
	fileCRC     bool            // a Z in packets carries the whole file's CRC-32C (capas3FileCRC)
	inodes      bool            // already-there answers and listings carry inode numbers (capas4Inodes)
	secondPass  bool            // the peer takes a second pass after a group failed saving (capas4SecondPass)
	keptRanges  bool            // a resume's A-ACK may list ranges kept past its point (capas4KeptRanges)
	out         framing.Quoting // how we encode what we send
	in          framing.Quoting // how we decode what we receive
	timeout     time.Duration   // how long the peer wants us to wait for it
	peer        framing.Params
}

// myParams are this side's Send-Init fields for cfg.
func myParams(cfg *Config, server bool) framing.Params {
	p := framing.DefaultParams()
	p.MaxLen = 94
	p.Timeout = int(cfg.Timeout / time.Second)
	if p.Timeout < 1 {
		p.Timeout = 1
	}
	if p.Timeout > 94 {
		p.Timeout = 94
	}
	p.NPad = 0
	p.PadChar = 0
	p.EOL = '\r'
	p.QCTL = '#'
	p.QBIN = 'Y'
	if cfg.Parity {
		p.QBIN = '&'
	}
	p.Check = cfg.Check
	if cfg.Check == CheckForce3 {
		p.Check, p.Force3 = 3, true
	}
	p.REPT = '~'
	p.Capas = framing.CapLong | framing.CapResend
	if cfg.Window > 1 {
		p.Capas |= framing.CapWindows
	}
	if cfg.Attributes {
		p.Capas |= framing.CapAttrs
	}
	p.Capas2 = capas2RawOK | capas2SkipWhole | capas2DirAttrs | capas2NotStored
	if !cfg.noUnlessThere {
		p.Capas3 = capas3UnlessThere
	}
	p.Capas3 |= capas3SubSecond | capas3PassedOver | capas3FileCRC
	if !cfg.noInodes {
		p.Capas4 = capas4Inodes
	}
	if !cfg.Reliable {
		p.Capas4 |= capas4KeepRepeat
	}
	if !cfg.noSecondPass {
		p.Capas4 |= capas4SecondPass
	}
	if !cfg.noKeptRanges {
		p.Capas4 |= capas4KeptRanges
	}
	if cfg.noPassedOver {
		p.Capas3 &^= capas3PassedOver
	}
	if server {
		p.Capas3 |= capas3ListsTree
	}
	if cfg.noDirAttrs {
		p.Capas2 &^= capas2DirAttrs
	}
	if cfg.Dual != nil {
		p.Capas2 |= framing.Cap2DualChannel
	}
	p.Window = clamp(cfg.Window, 1, 31)
	p.MaxLenX = framing.MaxLongLen
	switch {
	case cfg.MaxPacket >= framing.MaxShortLen:
		p.MaxLenX = min(cfg.MaxPacket, framing.MaxLongLen)
	case cfg.MaxPacket > 0:
		// Shorter than a short packet: MAXL says it, and no long
		// packets are offered (a peer would take MAXLX for them).
		p.MaxLen = max(cfg.MaxPacket, MinPacket)
		p.Capas &^= framing.CapLong
		p.MaxLenX = framing.MaxShortLen
	}
	p.WhatAmI = framing.WhatValid | framing.WhatLiteral
	if !cfg.Text {
		p.WhatAmI |= framing.WhatBinary
	}
	if cfg.Streaming {
		p.WhatAmI |= framing.WhatStreaming
	}
	if server {
		p.WhatAmI |= framing.WhatServer
	}
	p.SysID = "U1"
	p.WhatAmI2 = framing.WhatValid
	return p
}

// negotiate combines this side's and the peer's Send-Init fields.
// weSend says whether this side sent the S (and so will send the data).
func negotiate(cfg *Config, mine, peer framing.Params, weSend bool) negotiated {
	sender := peer
	if weSend {
		sender = mine
	}
	n := negotiated{peer: peer}
	n.check = 1
	if mine.Check == peer.Check && peer.Check >= 1 && peer.Check <= 3 {
		n.check = mine.Check
	}
	n.long = mine.Capas&framing.CapLong != 0 && peer.Capas&framing.CapLong != 0
	n.window = 1
	if mine.Capas&framing.CapWindows != 0 && peer.Capas&framing.CapWindows != 0 {
		n.window = clamp(min(mine.Window, peer.Window), 1, 31)
	}
	n.attrs = mine.Capas&framing.CapAttrs != 0 && peer.Capas&framing.CapAttrs != 0
	n.resend = n.attrs && mine.Capas&framing.CapResend != 0 && peer.Capas&framing.CapResend != 0
	n.streaming = mine.WhatAmI&framing.WhatValid != 0 && peer.WhatAmI&framing.WhatValid != 0 &&
		mine.WhatAmI&framing.WhatStreaming != 0 && peer.WhatAmI&framing.WhatStreaming != 0
	n.dual = mine.Capas2&framing.Cap2DualChannel != 0 && peer.Capas2&framing.Cap2DualChannel != 0
	n.peerKerf = peer.Capas2&capas2RawOK != 0
	n.skipWhole = peer.Capas2&capas2SkipWhole != 0 && mine.Capas2&capas2SkipWhole != 0
	n.unlessThere = n.skipWhole && peer.Capas3&capas3UnlessThere != 0 && mine.Capas3&capas3UnlessThere != 0
	n.subSecond = peer.Capas3&capas3SubSecond != 0 && mine.Capas3&capas3SubSecond != 0
	n.passedOver = peer.Capas3&capas3PassedOver != 0 && mine.Capas3&capas3PassedOver != 0
	n.dirAttrs = peer.Capas2&capas2DirAttrs != 0 && mine.Capas2&capas2DirAttrs != 0
	n.notStored = peer.Capas2&capas2NotStored != 0 && mine.Capas2&capas2NotStored != 0
	n.fileCRC = n.notStored && peer.Capas3&capas3FileCRC != 0 && mine.Capas3&capas3FileCRC != 0
	n.inodes = peer.Capas4&capas4Inodes != 0 && mine.Capas4&capas4Inodes != 0
	n.secondPass = peer.Capas4&capas4SecondPass != 0
	n.keptRanges = peer.Capas4&capas4KeptRanges != 0 && mine.Capas4&capas4KeptRanges != 0

	// longHeaderWire is what a long packet has beyond LENX's count: MARK,
	// LEN, SEQ, TYPE, LENX1, LENX2, HCHECK; and 2 more, the margin the
	// short packets keep.
	const longHeaderWire = 9
	// Longest packet we may send: the peer's receive limit, less the
	// header, the check and a safety margin (C-Kermit 10 itself keeps 2).
	chk := n.check.Len()
	maxPkt := peer.MaxLen
	if maxPkt < 10 || maxPkt > 94 {
		maxPkt = 80
	}
	n.maxData = maxPkt - 2 - chk // LEN counts SEQ TYPE DATA CHECK
	n.shortData = n.maxData
	if n.long {
		lx := peer.MaxLenX
		if lx <= 0 {
			lx = 500
		}
		lx = min(lx, framing.MaxLongLen)
		n.maxData = lx - chk - 2
		if !n.peerKerf {
			// G-Kermit reads a packet into a buffer of its MAXLX that
			// holds the header too: at -e 9000, its documented most, a
			// packet of that length overflowed it and it left without
			// a word (QA z; C-Kermit's 3 bytes short overflow it too).
			// The whole packet, MARK to check, stays within MAXLX.
			n.maxData -= longHeaderWire
		}
	}
	if n.maxData < 10 {
		n.maxData = 10
	}

	n.out.QCTL = mine.QCTL
	n.in.QCTL = peer.QCTL
	if n.in.QCTL < 33 || n.in.QCTL > 126 {
		n.in.QCTL = '#'
	}
	qbin := byte(0)
	switch {
	case isPrefixChar(mine.QBIN) && (peer.QBIN == 'Y' || peer.QBIN == mine.QBIN):
		qbin = mine.QBIN
	case isPrefixChar(peer.QBIN) && (mine.QBIN == 'Y' || mine.QBIN == peer.QBIN):
		qbin = peer.QBIN
	}
	n.out.QBIN, n.in.QBIN = qbin, qbin
	if mine.REPT == peer.REPT && isPrefixChar(mine.REPT) && mine.REPT != n.in.QCTL && mine.REPT != n.out.QCTL && mine.REPT != qbin {
		// (Prefixes must differ: a peer whose control prefix is the
		// repeat prefix would have its prefixed bytes read as counts.)
		n.out.REPT, n.in.REPT = mine.REPT, mine.REPT
	}
	minimal := cfg.Unprefix == UnprefixMinimal && n.peerKerf && !cfg.Parity
	keepRepeat := mine.Capas4&capas4KeepRepeat != 0 && peer.Capas4&capas4KeepRepeat != 0
	if n.peerKerf && mine.Capas2&capas2RawOK != 0 && sender.WhatAmI&framing.WhatValid != 0 && sender.WhatAmI&framing.WhatBinary != 0 && !keepRepeat {
		// Between kerf peers sending binary, repeat compression costs the
		// escaping of every '~' and wins nothing on compressed or random
		// data, which is what bulk transfers mostly carry. Both sides
		// decide this from the two Send-Inits alone, so they agree.
		n.out.REPT, n.in.REPT = 0, 0
	}
	switch {
	case cfg.Parity || cfg.Unprefix == UnprefixNone:
		// everything prefixed
	case minimal:
		for i := range n.out.Bare {
			n.out.Bare[i] = true
		}
		n.out.LengthFramed = true
	default:
		n.out.Bare = framing.CautiousBare()
	}
	// Never send raw: the packet mark (resynchronisation depends on it).
	for _, m := range []byte{framing.SOH, cfg.Mark} {
		if m == 0 {
			continue // no mark of its own: SOH
		}
		n.out.Bare[m] = false
		if !n.out.LengthFramed {
			n.out.Bare[m|0x80] = false
		}
	}
	if !n.peerKerf {
		// C-Kermit receivers from 5A(188) through 10.0 mishandle a raw NUL
		// in a stashed out-of-order packet; CR may be eaten by terminals.
		for _, b := range []byte{0, 0x80, '\r', '\r' | 0x80} {
			n.out.Bare[b] = false
		}
	}
	n.timeout = time.Duration(peer.Timeout) * time.Second
	if n.timeout <= 0 {
		n.timeout = 5 * time.Second
	}
	return n
}

func isPrefixChar(c byte) bool { return (c >= 33 && c <= 62) || (c >= 96 && c <= 126) }

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
