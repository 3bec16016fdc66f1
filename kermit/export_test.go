package kermit

import (
	"bytes"
	"context"
	"time"

	"kerf/framing"
)

// AddParity is addParity, for the external tests (FuzzServe's seeds).
var AddParity = addParity

// WithoutDirAttrs makes cfg a kerf from before directory attributes
// (capas2DirAttrs), for tests of that peer.
func WithoutDirAttrs(cfg Config) Config { cfg.noDirAttrs = true; return cfg }

// WithoutUnlessThere makes cfg a kerf from before the disposition '='
// (capas3UnlessThere).
func WithoutUnlessThere(cfg Config) Config { cfg.noUnlessThere = true; return cfg }

// WithVerdictSize makes a sender wait for the verdict on files of n
// bytes and more (Session.verdictSize).
func WithVerdictSize(cfg Config, n int64) Config { cfg.verdictSize = n; return cfg }

// SendInitWire is the S packet (sequence 0, block check 3) a client
// with cfg sends first.
func SendInitWire(cfg Config) []byte {
	p := myParams(&cfg, false)
	f := framing.Frame{Mark: framing.SOH, Check: 3}
	wire, _ := f.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'S', Data: p.Marshal()})
	return wire
}

// WithoutPassedOver makes cfg a kerf from before entries passed over
// were announced (capas3PassedOver).
func WithoutPassedOver(cfg Config) Config { cfg.noPassedOver = true; return cfg }

// WithoutSecondPass makes cfg a kerf from before a receiver said it
// takes a second pass (capas4SecondPass).
func WithoutSecondPass(cfg Config) Config { cfg.noSecondPass = true; return cfg }

// WithoutKeptRanges makes cfg a kerf from before a resume's A-ACK
// listed ranges kept past its point (capas4KeptRanges).
func WithoutKeptRanges(cfg Config) Config { cfg.noKeptRanges = true; return cfg }

// SetMaxTextReply sets maxTextReply to n and returns what puts it back.
func SetMaxTextReply(n int) func() {
	old := maxTextReply
	maxTextReply = n
	return func() { maxTextReply = old }
}

// InShare says whether name falls in share k of n of a GET.
func InShare(name string, k, n int) bool { return share{k, n}.has(name) }

// SetSavedEvery sets savedEvery to n and returns what puts it back.
func SetSavedEvery(n int) func() {
	old := savedEvery
	savedEvery = n
	return func() { savedEvery = old }
}

// SetVerdictNoteAfter sets verdictNoteAfter to d and returns what puts
// it back.
func SetVerdictNoteAfter(d time.Duration) func() {
	old := verdictNoteAfter
	verdictNoteAfter = d
	return func() { verdictNoteAfter = old }
}

// WithoutLengthCheck makes cfg a sender from before it compared what it
// read of a file in packets with the size it announced.
func WithoutLengthCheck(cfg Config) Config { cfg.noLengthCheck = true; return cfg }

// WithoutInodes makes cfg a kerf from before already-there answers and
// tree listings carried inode numbers (capas4Inodes).
func WithoutInodes(cfg Config) Config { cfg.noInodes = true; return cfg }

// SetDrainIdle sets how long a draining server session waits for the
// next command; the returned func puts it back.
func SetDrainIdle(d time.Duration) func() {
	old := drainIdle
	drainIdle = d
	return func() { drainIdle = old }
}

// FillAccountlessSkip counts the accountless skip bound full, as if
// anonymous sessions held it; the returned func gives it back.
func FillAccountlessSkip() func() {
	skipInUseAccountless.Add(maxSkip)
	return func() { skipInUseAccountless.Add(-maxSkip) }
}

// SendStray has s send, outside any transfer, the F of a file named
// name and data as the file's blocks on the data path: what a sender
// sent ahead of the receiver's E that ended its group.
func SendStray(ctx context.Context, s *Session, name string, data []byte) error {
	enc, err := s.encodeField([]byte(name))
	if err != nil {
		return err
	}
	s.sendFileID++
	if err := s.c.send(s.sw.next, 'F', enc); err != nil {
		return err
	}
	if err := s.c.flush(); err != nil {
		return err
	}
	if _, err := s.data.SendFile(ctx, s.sendFileID, bytes.NewReader(data), 0, int64(len(data))); err != nil {
		return err
	}
	return s.data.Flush()
}

// Capas2RawOK is the CAPAS bit that says a peer is a kerf.
const Capas2RawOK = capas2RawOK
