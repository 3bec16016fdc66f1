package kermit

import (
	"io"
	"io/fs"
	"iter"
	"slices"
	"time"

	"kerf/framing"
)

// FileReader is an open file being sent. *os.File satisfies it.
type FileReader interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// stickyBit is the Unix mode bit S_ISVTX in the octal protection
// attribute: sent and kept for directories only (setuid and setgid
// never travel).
const stickyBit = 0o1000

// OutgoingFile is one file offered to the peer. For a directory, Mode
// may have fs.ModeSticky too.
type OutgoingFile struct {
	Name    string // name sent in the F packet: '/'-separated, relative
	Size    int64  // -1 if unknown
	ModTime time.Time
	// ChangeTime, if known, is the file's ctime when it was listed: a
	// file whose ctime moved while it was sent changed, even if it kept
	// its size and modification time (filestore.ChangeTime).
	ChangeTime time.Time
	// Status, if known, is the file's links, mode and owner when it was
	// listed: a ctime moved by a change of these (a link made, chmod,
	// chown) while it was sent is not taken for a write.
	Status FileStatus
	Mode   fs.FileMode // permission bits; sent when non-zero or ModeKnown
	// ModeKnown says Mode is the file's own, so that mode 000 is sent too.
	ModeKnown bool
	// Dir marks a directory of a recursive transfer, listed before what
	// is in it: it has no data and no Open, and goes only to a kerf peer
	// (see DirReceiver). ModTime, Mode and ModeKnown are its own.
	Dir bool
	// Filled: files go under this directory too, which makes it on any
	// receiver; its entry goes only to a peer that keeps directories'
	// attributes (DirAttrReceiver). An empty one goes to every kerf peer.
	Filled bool
	Open   func() (FileReader, error)
	// Path, if set, is where the file is on this side (for logs; see
	// Event.Path).
	Path string
	// Moved, if set, holds the files this side's --remove-source-files
	// removed in the file's scope: a file gone, or gone while sent,
	// because it went under another name (a link to it) is told apart.
	Moved *MovedFiles
	// StatAtOpen: the listing did not look at the file (a walk that needs
	// no sizes, saving a system call a file), so its size, times, status
	// and mode are what its open finds (asOpened; Size is -1 until then).
	StatAtOpen bool
}

// FileList is what SendParallelList sends: a listing whose entries need
// not be held in memory at once (a tree walked again as it is sent), so
// that a sender's memory does not grow with the files it sends.
type FileList struct {
	// All yields every entry to send, in order: a directory before what
	// is under it, one file of a name. It is walked once, as the
	// sessions take the files (what they did not take, to name it not
	// begun, on the same walk).
	All iter.Seq[OutgoingFile]
	// Dirs yields the directories of All alone, in All's order and as
	// All gives them (Filled too): several sessions make them all before
	// any file goes. It may come from a walk of its own. Nil: none.
	Dirs iter.Seq[OutgoingFile]
	// Late yields what is sent after All, and is read once All is used
	// up (a walk may find them as it goes): a second file of a name,
	// announced as not sent, which on another session could overtake
	// the first and disturb its partial or its receipt. Nil: none.
	Late iter.Seq[OutgoingFile]
}

// orNone is l with Dirs and Late that yield nothing when nil.
func (l FileList) orNone() FileList {
	none := func(func(OutgoingFile) bool) {}
	if l.Dirs == nil {
		l.Dirs = none
	}
	if l.Late == nil {
		l.Late = none
	}
	return l
}

// ListOf is the FileList of files held in memory: a second file of a
// name goes to Late.
func ListOf(files []OutgoingFile) FileList {
	return listOf(files, false)
}

// ListOfUnique is ListOf for files whose names are known to differ (a
// walk of trees whose top names differ): they are not looked up, a
// map of every name built and thrown away on the way to the first file
// (for 2,000 files about half a megabyte of fresh memory).
func ListOfUnique(files []OutgoingFile) FileList {
	return listOf(files, true)
}

func listOf(files []OutgoingFile, unique bool) FileList {
	all, late := files, []OutgoingFile(nil)
	if !unique {
		all, late = secondsApart(files)
	}
	return FileList{
		All: slices.Values(all),
		Dirs: func(yield func(OutgoingFile) bool) {
			for _, f := range all {
				if f.Dir && !yield(f) {
					return
				}
			}
		},
		Late: slices.Values(late),
	}
}

// secondsApart returns files without the second files of a name, and
// those. The first is files itself until a second file of a name turns
// up: a list of many small files is not copied (page faults of a copy
// cost a few microseconds a file on some machines).
func secondsApart(files []OutgoingFile) (all, late []OutgoingFile) {
	all = files
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		switch {
		case f.Dir:
		case seen[f.Name]:
			if late == nil {
				// A copy from here on, files left as they are.
				all = append(make([]OutgoingFile, 0, len(files)), files[:i]...)
			}
			late = append(late, f)
			continue
		default:
			seen[f.Name] = true
		}
		if late != nil {
			all = append(all, f)
		}
	}
	return all, late
}

// DirReceiver is an optional extension of a Store: ReceiveDir creates the
// directory a kerf peer sends (an empty directory of a recursive
// transfer), as Create would name it; files need no such call, since
// Create makes their directories.
type DirReceiver interface {
	ReceiveDir(name string) error
}

// RoomChecker is an optional extension of Incoming: Room reports an
// error if n more bytes will not fit where the file is stored, so that
// a file announced too big is refused before its data.
type RoomChecker interface {
	Room(n int64) error
}

// DirAttrReceiver is an optional extension of a DirReceiver, for kerf
// peers that send every directory with its attributes. MakeDir creates
// the directory (and its parents) when it is missing, private to its
// owner at least as much as perm says, and writable by the owner while
// the group is received; SetDirAttrs, called once the group is in (the
// deepest directories first), gives it perm (if havePerm) and the
// modification time mtime (if not zero).
type DirAttrReceiver interface {
	DirReceiver
	MakeDir(name string, perm fs.FileMode, havePerm bool) error
	SetDirAttrs(name string, perm fs.FileMode, havePerm bool, mtime time.Time) error
}

// Store is where a receiving engine puts files.
type Store interface {
	// Create begins a file the peer names name. The returned Incoming
	// holds its data under a temporary name until Commit.
	Create(name string) (Incoming, error)
}

// Incoming is a file being received.
type Incoming interface {
	io.WriterAt
	// Name is the name the file will have once complete (reported to the
	// peer in the ACK to its F packet).
	Name() string
	// Partial reports the length and CRC-32C of data kept from an earlier
	// interrupted transfer of the same file, for recovery.
	Partial() (size int64, crc uint32, err error)
	// Truncate discards data beyond size.
	Truncate(size int64) error
	// Commit makes the file durable and gives it its final name, with the
	// permission bits given (applied as they are, 000 included) and the
	// modification time given (zero: leave as is).
	Commit(modTime time.Time, perm fs.FileMode) error
	// Abort ends an incomplete file. With keep, the partial data stays
	// (under its temporary name) for a later recovery.
	Abort(keep bool) error
}

// KeptPartial is an optional extension of an Incoming: a partial kept
// with ranges of data past its gap-free prefix (DataKeeper).
type KeptPartial interface {
	// PartialKept is Partial that also gives up to most of the ranges
	// past size kept with the partial, with their CRC-32Cs; the file
	// is cut after the last one given.
	PartialKept(most int) (size int64, crc uint32, kept []framing.KeptRange, err error)
	// KeepRanges says, before Abort(true), that only [0, prefix) and
	// ranges (past it, sorted, apart) hold data: the file is cut after
	// the last range kept, and they are recorded for PartialKept. It
	// returns the file's length.
	KeepRanges(prefix int64, ranges [][2]int64) (int64, error)
}

// SizeHinted is an optional extension of an Incoming: told, once the
// file's attributes are in and before any data or recovery question,
// the size its sender announced (-1: none) and whether it asks to
// resume, so that the store can choose how to hold it (filestore keeps
// a small file unnamed until it is complete). An error refuses the
// file.
type SizeHinted interface {
	WillHold(size int64, resume bool) error
}

// MatchStreamer is an optional extension of a ServerFS: Match handing
// the files to yield one at a time as its walk finds them, until yield
// returns false, keeping of the trees it walks only the entries keep
// accepts by the name they are sent under (directories are all kept;
// nil keeps all), and saying how many it left out. An error of the
// whole spec comes before any file. A server's GET sends from it, so
// that it holds no listing of the tree (memory independent of the
// files of one GET) and its first files go while the rest are being
// found; a session serving one share of a GET (kerf-share) walks only
// its share.
type MatchStreamer interface {
	MatchEach(spec string, recursive bool, keep func(name string) bool, yield func(OutgoingFile) bool) (left int, err error)
}

// ServerFS is what a Kermit server serves: a confined file tree with a
// current directory.
// RemoveNamer is a ServerFS that tells which files a REMOTE DELETE
// removed (a pattern's each by its name from the tree's top), for the
// reply to say them: the first max of them, and how many in all;
// literal is LiteralFS's RemoveLiteral.
type RemoveNamer interface {
	RemoveNamed(name string, literal bool, max int) (first []string, n int, err error)
}

type ServerFS interface {
	Store
	// Match resolves a GET filespec (names and wildcards) to files.
	Match(spec string, recursive bool) ([]OutgoingFile, error)
	List(spec string) (string, error)
	Chdir(dir string) error
	Pwd() string
	Remove(name string) error
	Mkdir(name string) error
	Rmdir(name string) error
	Rename(from, to string) error
}
