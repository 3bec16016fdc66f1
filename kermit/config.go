// Package kermit is kerf's one Kermit protocol engine: negotiation, file
// groups (S F A D Z B), sliding windows with selective repeat, streaming,
// attributes, recovery, cancellation and server mode. It runs over any
// byte stream (a pty, a serial port, stdio or a TCP connection); file
// data goes either in-band as D packets or through a DataPath, which is
// how the dual-channel service moves bytes outside the packet stream.
//
// It does not open files by itself beyond the Store/FS interfaces it is
// given, and it does not dial or listen.
package kermit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"kerf/framing"
)

// Unprefix selects which control bytes may travel unprefixed.
type Unprefix int

const (
	// UnprefixCautious leaves bare the controls C-Kermit leaves bare by
	// default; it is safe on terminals and most serial lines.
	UnprefixCautious Unprefix = iota
	// UnprefixNone prefixes every control byte (G-Kermit's behaviour).
	UnprefixNone
	// UnprefixMinimal prefixes only what kerf's own framing needs (the
	// packet mark). Used between kerf peers on 8-bit clean links.
	UnprefixMinimal
)

// CheckForce3 as Config.Check is C-Kermit's block check 5 ("FORCE-3"):
// the 16-bit CRC on every packet, the Send-Init and its ACK included.
// Without it kerf still detects a peer that forces type 3, and follows.
const CheckForce3 framing.CheckType = 5

// MinPacket is the shortest Config.MaxPacket: a LEN of 20 leaves a
// packet 15-17 bytes of data (less its check), room for the longest
// encoded byte (repeat, count, 8th-bit and control prefixes, the byte)
// three times over.
const MinPacket = 20

// Config holds one side's protocol preferences. The zero value is not
// useful; start from DefaultConfig.
type Config struct {
	Window int // sliding window slots, 1..31
	// MaxPacket is the longest packet this side will receive
	// (MinPacket..9024). Below 94 it is the Send-Init's MAXL, with no
	// long packets offered, as C-Kermit's SET RECEIVE PACKET-LENGTH
	// does (for a Kermit or a front end with small buffers). 0 means
	// automatic: 9024, but 4000 towards a classic Kermit sender, whose
	// fixed-size retransmissions fare badly with longer packets on a
	// noisy line (C-Kermit itself asks for 4000).
	MaxPacket  int
	Check      framing.CheckType // preferred block check: 1, 2, 3, or CheckForce3
	Attributes bool              // offer attribute packets
	Streaming  bool              // offer streaming (only sensible on reliable links)
	Unprefix   Unprefix          // what this side leaves bare when sending
	Parity     bool              // 7-bit link: 8th-bit prefixing and stripped parity
	// DetectParity follows a peer whose first packets carry parity (the
	// 8th bit of every byte even, odd or always set) while Parity is off:
	// the link takes the parity found if it has SetParity (serialfallback's
	// does; otherwise the session applies it to what it writes), and the
	// session turns 7-bit as with Parity.
	DetectParity bool
	Text         bool // send files in text mode (LF <-> CRLF)
	Resume       bool // sender asks to recover partial files at the receiver
	// ModifyWindow: a resume's quick checks (SkipWhole, a receiver's
	// already-there) take times at most this far apart for one, as
	// rsync's --modify-window (FAT keeps 2 s steps). 0: SameModTime.
	ModifyWindow time.Duration
	// ShortWithoutI: the peer is a kerf server (over TLS), and Generic
	// sends REMOTE CD, MKDIR and SET with no I exchange before them where
	// they fit a short packet (GenericWithDefaults): their answers are
	// short, and a send into a remote directory, and each session of a
	// GET asking for its share, saves a round trip a command.
	ShortWithoutI bool

	// Mark is the start-of-packet character of packets sent and received
	// (0: SOH, Ctrl-A), for links that eat Ctrl-A: C-Kermit's SET SEND
	// and SET RECEIVE START-OF-PACKET, which both ends must agree on
	// before they meet, since Send-Init cannot carry it. A control
	// character other than CR.
	Mark byte

	// CtrlCQuits: three Ctrl-C (ETX) in a row between packets end the
	// session with ErrCtrlC, as they end E-Kermit and C-Kermit in remote
	// mode: for a line that is the user's own terminal (serial --stdio),
	// whose raw mode passes a typed Ctrl-C on as a byte (QA: kerf went on
	// waiting where kermit -r and gkermit -r quit).
	CtrlCQuits bool

	// LineSpeed is the link's speed in bits per second, if known (serial
	// lines); it lets packet timers allow for time queued on the line.
	LineSpeed int

	// Timeout is the initial retransmission timeout; it adapts to the
	// measured round trip. MinTimeout bounds it from below.
	Timeout    time.Duration
	MinTimeout time.Duration
	// MaxRetries is how many consecutive timeouts (or NAKs that make a
	// packet whose ACK carries data go again) without any progress end
	// the transfer (the next one does).
	MaxRetries int
	// IdleTimeout ends a streaming or server session that hears nothing
	// for this long (0 = never).
	IdleTimeout time.Duration
	// Conceal, if set, returns a path never told to the peer: a server's
	// root, which the system's errors on an open file name whole. It is
	// cut out of the words of errors sent (E packets, refusals, a Z's
	// reason), with the separator after it.
	Conceal func() string
	// Drain, once closed, ends a server session between its client's
	// commands: it goes on with the command under way, and ends, telling
	// the client ShuttingDown, once it has waited 10 s for the next
	// (the commands of one client operation, a CD then a SEND, come
	// back to back, or after the client's walk of its tree). A server draining for a stop closes it.
	Drain <-chan struct{}

	// Dual, when set, offers the dual-channel extension; once both sides
	// agree, the data path it opens carries file bytes.
	Dual Dual

	Log    *slog.Logger
	Events func(Event)

	// KeepServing: the link outlives any one peer (a serial line), so a
	// server whose client vanished mid-command (too many retries, a
	// write the line would not take) goes back to waiting for commands,
	// as C-Kermit's server does; only the end of its input ends Serve.
	KeepServing bool

	// Reliable: the link loses and damages nothing (TCP). A timeout then
	// resends nothing, since the packet is still on its way: it only
	// counts towards MaxRetries. A second copy would be answered twice,
	// and Kermit's sequence numbers, which start at 0 in every
	// transaction, cannot tell the second answer from the reply to the
	// next transaction's packet (a login's ACK taken for the ACK of the
	// Send-Init after it, whose parameters it then lacks). A NAK, the
	// peer asking, still gets the packet again. Choose Timeout and
	// MinTimeout for it: MaxRetries of them without an answer end the
	// transfer (kerf's control connections: 20 of 20 s).
	Reliable bool
	// PeerLocal: the peer runs on this machine (control sets it by
	// datachan.SameHost of the connection), and may see the very
	// files this side has. A GET with kerf-remove-source-files then
	// removes no file the client found already there whole: it may be
	// this one (QA: a fetch into the server's own directory removed the
	// only copy).
	PeerLocal bool

	// noDirAttrs leaves capas2DirAttrs out of this side's Send-Init, as
	// a kerf from before it does (tests of that peer).
	noDirAttrs bool
	// noUnlessThere leaves capas3UnlessThere out (tests: a kerf from
	// before it).
	noUnlessThere bool
	// noInodes leaves capas4Inodes out (tests: a kerf from before it).
	noInodes bool
	// noPassedOver leaves capas3PassedOver out (tests: a kerf from
	// before it).
	noPassedOver bool
	// noSecondPass leaves capas4SecondPass out (tests: a kerf from
	// before it).
	noSecondPass bool
	// noKeptRanges leaves capas4KeptRanges out (tests: a kerf from
	// before it).
	noKeptRanges bool
	// noLengthCheck: a sender that does not compare what it read of a
	// file in packets with the size it announced (tests: a kerf from
	// before that check).
	noLengthCheck bool
	// verdictSize, if set, replaces Session.verdictSize (tests).
	verdictSize int64
}

// DefaultConfig is the best classic Kermit this side can do; the peer's
// Send-Init brings each field down to what both support.
func DefaultConfig() Config {
	return Config{
		Window:     31,
		Check:      3,
		Attributes: true,
		Streaming:  false,
		Unprefix:   UnprefixCautious,
		Timeout:    5 * time.Second,
		MinTimeout: 200 * time.Millisecond,
		MaxRetries: 20,
		Log:        slog.New(slog.DiscardHandler),
	}
}

// Dual is the control layer's part in the dual-channel negotiation.
type Dual interface {
	// Offer returns the extension field for this side's Send-Init (or its
	// ACK), given the peer's field ("" when this side speaks first).
	Offer(peerExt string) string
	// Open is called once, when both sides have agreed to the extension;
	// it connects the data path described by the extension fields. A
	// server's Open whose wait for the peer's connections ran out
	// returns an error wrapping ErrDataNotArrived.
	Open(ctx context.Context, peerExt string) (DataPath, error)
}

// ErrDataNotArrived is why a server's Dual.Open failed when the client's
// data connections did not arrive in time. The client, whose own Open
// succeeded, dialled them: they were lost on the way (a reset while they
// paired), and a session of its dialled again would open its data path,
// so the client counts its session lost by this E, not refused.
var ErrDataNotArrived = errors.New("the data connections did not arrive in time")

// EventKind names what an Event reports.
type EventKind int

const (
	FileStart EventKind = iota
	FileProgress
	// FileDone: the file is complete and verified (a receiver has
	// committed it; its durable rename may wait for the group's end).
	FileDone
	FileSkipped
	FileFailed
	// FileSaved: a received file is durable under its final name (for
	// a store that batches, when the group ends; see groupBatcher), or
	// a kerf receiver said so of a sent one (its group's B ACKed). It
	// follows the file's FileDone, with its fields (a sent file's: its
	// name, path and size).
	FileSaved
	// Reconnecting: the session was lost (Err says why: the loss, or
	// the last dial's failure) and a successor is dialled (Reconnect)
	// after Duration. Of no file: Name is empty.
	Reconnecting
	// SourceKept: a file a GET asked the server to remove once saved
	// here (GetOptions.RemoveSource) stays on the server; Err says why.
	SourceKept
)

// Event reports transfer progress to the command line.
type Event struct {
	Kind   EventKind
	Name   string
	Size   int64 // -1 if unknown
	Bytes  int64 // bytes of file data moved so far (this session)
	Offset int64 // resume point
	// Kept is the part of Bytes the receiver had already, past the
	// resume point (ranges a resume did not send again:
	// capas4KeptRanges); FileProgress and FileDone.
	Kept     int64
	CRC32C   uint32
	Duration time.Duration
	Err      error
	Sending  bool
	// Path is where this side keeps the file, when it knows: the name a
	// receiving Store gave it (Incoming.Name), a sent file's
	// OutgoingFile.Path.
	Path string
	// Again, on a FileDone: the file was told failed before, and a
	// take-over of a GET, which fetches the lost session's whole share
	// again, got it whole this time: the failure is withdrawn.
	Again bool
	// Final, on a sent file's FileDone: no FileSaved follows, as a
	// classic Kermit receiver says nothing more of a file after the ACK
	// of its Z (which it sends once it has closed the file: what
	// C-Kermit's SEND /DELETE goes by).
	Final bool
	// ModTime, on a sent file's FileStart, and its FileSkipped when the
	// receiver has it whole (ErrAlreadyThere), is the file's
	// modification time as listed, the one sent.
	ModTime time.Time
	// ThereIno, on a sent file's FileSkipped for ErrAlreadyThere, is the
	// inode number of the receiver's copy when the receiver gave it (a
	// kerf peer, capas4Inodes), else 0: a copy with this file's own
	// number may be this very file, on a file system both share.
	ThereIno uint64
}
