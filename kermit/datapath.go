package kermit

import (
	"context"
	"io"

	"kerf/framing"
)

// DataPath carries file contents outside the Kermit packet stream: the
// seam between the one protocol engine and the dual-channel service.
// With no DataPath the engine sends file data in-band as D packets
// (classic Kermit); with one, F/A/Z/B still travel as packets and the
// bytes between A and Z go through the DataPath instead.
//
// File ids are assigned by the sending engine, one per file, in order,
// starting at 1 for each session; the receiving engine learns a file's id
// by counting the F and X packets it receives (the n-th of them has id n,
// whether or not its data came on the data path: protocol.md §4.1).
type DataPath interface {
	// SendFile transmits bytes [off, off+n) of src as file id and returns
	// their CRC-32C (Castagnoli). It returns once every byte has been
	// handed to the transport or held for the next Flush; src must stay
	// readable until Release(id),
	// because a block the peer reports damaged is re-read and re-sent.
	SendFile(ctx context.Context, id uint32, src io.ReaderAt, off, n int64) (crc uint32, err error)
	// Release says file id is finished (its Z was acknowledged).
	Release(id uint32)
	// Flush writes data SendFile has accepted but held back (small
	// files are batched). The engine calls it before it writes its
	// control packets, so a file's data never trails its Z.
	Flush() error

	// Expect announces that bytes [off, off+n) of file id will arrive and
	// must be written to dst. Blocks for id that arrive before Expect wait
	// for it. A refused file is Expect-ed with a dst that discards.
	// On a failed path Expect returns the failure, but still takes id
	// and writes what came for it: Abandon counts that.
	Expect(id uint32, dst io.WriterAt, off, n int64) error
	// Wait blocks until every byte of file id has been verified and
	// written to dst, and returns the CRC-32C of [off, off+n).
	Wait(ctx context.Context, id uint32) (crc uint32, err error)
	// Ready reports whether Wait(id) would return at once. The engine
	// writes out its queued packets before a Wait that would block, and
	// only then: a small file's data is usually in before its Z.
	Ready(id uint32) bool
	// Abandon stops writing file id, waits for the blocks already
	// verified to be written (the engine closes or cuts the file only
	// after it) and returns the length of the gap-free prefix of [off, off+n) on dst:
	// what an interrupted file keeps for recovery.
	Abandon(id uint32) int64

	// Close ends the data path; pending Waits fail.
	Close() error
}

// DataProgress is an optional extension of a DataPath: Progress grows
// whenever file data moves. A streaming receiver waiting for the Z of a
// file whose data is still arriving is not idle: its wait goes on while
// Progress moves (a big upload outlasts any idle timeout).
type DataProgress interface {
	Progress() int64
}

// DataFailure is an optional extension of a DataPath: Failed is closed
// when the path fails, and LocalFailure is then the cause if this side
// found it (a block damaged past recovery, a protocol error), not a
// lost connection. A receiving engine waiting for control packets ends
// at once on a local failure and tells the peer why: the peer only sees
// its data connections close.
type DataFailure interface {
	Failed() <-chan struct{}
	LocalFailure() error
}

// RateLimited is a DataPath held to a rate (--limit-rate): RateLimit
// returns it in bytes per second, 0 for none.
type RateLimited interface {
	RateLimit() int64
}

// DataSettler is an optional extension of a DataPath: the engine, which
// expects files in the order of their F and X packets, says before each
// Expect that the ids below it are settled, so that blocks under an id
// the peer counted otherwise fail at once rather than wait unclaimed.
type DataSettler interface {
	// SettleBelow says every file id below next is expected already or
	// never comes (datachan.Path.SettleBelow); an error names blocks of
	// such an id that was not expected: ids the peer counted otherwise.
	SettleBelow(next uint32) error
}

// DataForsaker is an optional extension of a DataPath: the engine says
// which files it will never expect though their blocks may come, the F
// of each read outside a transfer (datachan.Path.Forsake). A path
// without it keeps their blocks until it closes.
type DataForsaker interface {
	Forsake(id uint32)
}

// DataFileFailure is an optional extension of a DataPath: FileErr says
// why file id, expected and not yet waited for, failed on this side (a
// write failed), or nil. The sender of such a file is stopped on the
// data path (datachan.WithStops) and ends it with a Z that discards it:
// the receiving engine answers that Z with its own reason.
type DataFileFailure interface {
	FileErr(id uint32) error
}

// DataKeeper is an optional extension of a DataPath: an interrupted
// file keeps not only its gap-free prefix but the ranges that came past
// it (blocks over other connections after one stalled), and a resumed
// one is expected with those ranges already there, so that only the
// gaps cross again (capas4KeptRanges).
type DataKeeper interface {
	// AbandonKept is Abandon that also returns the ranges of the file
	// (offsets in the file, sorted, apart) on dst past that prefix.
	AbandonKept(id uint32) (prefix int64, kept [][2]int64)
	// ExpectKept is Expect of a file whose dst holds kept already
	// (sorted, apart, within [off, off+n)): they count as received,
	// their CRCs in Wait's.
	ExpectKept(id uint32, dst io.WriterAt, off, n int64, kept []framing.KeptRange) error
}
