// Package filestore is the file side of kerf shared by every mode: it
// receives files under temporary names and renames them only when they
// are complete and durable, keeps partial files for recovery, and serves
// a directory tree to a Kermit server, all confined with os.Root so that
// no name a peer sends can reach outside the tree.
package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"kerf/framing"
	"kerf/kermit"
)

// ErrUnsafeName is returned for names that are absolute, climb out with
// "..", or contain control characters.
var ErrUnsafeName = errors.New("filestore: unsafe file name")

// A name another session holds is tried again every busyPoll, for at
// most busyGrace over a Dir's life (a session's), before Create says
// ErrBusy: enough for a server to see the end of a killed client's
// session (QA: up to 0.3 s) when the client is run again at once, and
// bounded, so that two live sessions sending the same names do not wait
// on each other file after file.
const (
	busyGrace = 2 * time.Second
	busyPoll  = 25 * time.Millisecond
)

// ErrBusy is returned by Create for a name another session is receiving.
var ErrBusy = errors.New("filestore: file is being received by another transfer (it is free once that one ends: on a server, when its client stops or the server drops it as idle)")

// busy is ErrBusy for rel, saying when a take-over would come where
// this Dir takes over (a server session's; see Holder).
func (d *Dir) busy(rel string) error {
	if d.TakeOverAfter > 0 && d.Holder != nil {
		return fmt.Errorf("%w; or taken over by a transfer of it once that one has moved nothing for %v: %s", ErrBusy, d.TakeOverAfter, rel)
	}
	return fmt.Errorf("%w: %s", ErrBusy, rel)
}

// PartSuffix marks a file still being received.
const PartSuffix = ".kerf-part"

// nameMax is the longest name (one path element) Linux file systems take.
const nameMax = 255

// TempName is the name a file named base is received under, in its
// directory: ".base.kerf-part", or, where that would exceed nameMax, a
// prefix of base (cut at a UTF-8 rune boundary) and a hash of all of
// it. It depends on base alone, so a later transfer finds the partial
// again, and a resumed send's quick check sees it in a listing.
// Everything that makes or looks for a temporary name goes through here
// (and isPartName).
func TempName(base string) string {
	if 1+len(base)+len(PartSuffix) <= nameMax {
		return "." + base + PartSuffix
	}
	sum := sha256.Sum256([]byte(base))
	tag := "~" + hex.EncodeToString(sum[:8])
	n := nameMax - 1 - len(tag) - len(PartSuffix)
	for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(base[n]); i++ {
		n--
	}
	return "." + base[:n] + tag + PartSuffix
}

// isPartName reports whether name, one path element, is a temporary
// file's (see TempName): such names are never served, listed, or
// accepted from a peer. One that only ends in PartSuffix ("x.kerf-part")
// is an ordinary file's.
// IsPartName reports whether name (one element) has the form of kerf's
// own partial files, .NAME.kerf-part: such files are neither sent nor
// served.
func IsPartName(name string) bool {
	return len(name) > 1+len(PartSuffix) && name[0] == '.' && strings.HasSuffix(name, PartSuffix)
}

// Dir is a directory tree files are received into and served from.
type Dir struct {
	root *os.Root
	// modesNotKept counts files and directories whose permission bits
	// the file system refused (modeRefused); modeRefusal is the first
	// such error. ModesNotKept reports them.
	modesNotKept atomic.Int64
	modeRefusal  atomic.Pointer[error]
	// top is the tree's top as a real absolute path, for absolute links
	// into the tree (underTop); "" if it cannot be known.
	top     string
	topOnce sync.Once
	// madeIn are the directories in which this Dir made (or may have
	// made) a directory since its last flush: synced by the flush too,
	// so that a saved file's new parents are durable with it (QA: only
	// a file's own directory was synced). Under mu.
	madeIn map[string]bool
	cwd    string // relative to root, "." at the top
	// busyWaited is how long Create has waited, in all, for names that
	// another session held (see busyGrace).
	busyWaited time.Duration
	// Holder, if set, is who this Dir's partial files are held for (a
	// server's session); with TakeOverAfter > 0, a Create that finds a
	// partial locked by a Holder of this process silent that long takes
	// it over (see Holder). watches are the holders waited for.
	Holder        Holder
	TakeOverAfter time.Duration
	// Done, if set, is closed when the Dir's session ends: a Create
	// waiting for another session's partial gives up then (ErrBusy).
	Done     <-chan struct{}
	watches  map[Holder]*holderWatch
	ReadOnly bool
	// Flat keeps only the last element of incoming names, for peers that
	// send bare names and for receivers that asked for no tree.
	Flat bool
	// Expect, if set, is asked of each name a peer sends, a file's (as
	// it would be stored: cut to its last element when Flat) or a
	// directory's, before anything is made for it; its error refuses
	// the name. A client sets it to what it asked for: a server could
	// otherwise store any name under the destination (.bashrc, .ssh/…),
	// the hole of scp's CVE-2019-6111.
	Expect func(name string) error
	// UniqueNames refuses to receive a file under a name a file was
	// already committed under through this Dir: a get of several
	// filespecs whose files share a name (a/x and b/x without -r) would
	// otherwise keep only the last, silently.
	UniqueNames bool
	// Names, if set, holds the final names committed with UniqueNames,
	// shared by the Dirs of one transfer's sessions; nil: the Dir's own.
	Names *NameSet
	// Folds, if set, is shared by the Dirs of one transfer's sessions
	// (FoldSet); nil: the Dir's own.
	Folds    *FoldSet
	foldOnce sync.Once
	// ModifyWindow: HasWhole takes a file whose time is at most this far
	// from the one listed for the same (rsync's --modify-window; FAT's
	// 2 s steps).
	ModifyWindow time.Duration
	// Sparse leaves holes where a received file has runs of zero bytes
	// (each page-aligned sparseMin bytes of zeros), as cp --sparse=always
	// and rsync --sparse do: disk images and the like then take only the
	// space of their data. Off by default, since a file whose zeros were
	// allocated on purpose (to reserve the space) would lose that.
	Sparse bool
	// Moved records the files RemoveSent removes, for the files sent
	// after them to tell a link to one of them (kermit.MovedFiles); it
	// is shared by the Dirs of one user's sessions. nil: none.
	Moved *kermit.MovedFiles
	// UnnamedMax is the largest file, by its announced size, received
	// as an unnamed file linked into place once complete (unnamed.go):
	// cheaper than a temporary name, but a crash of this process keeps
	// nothing of it. 0: never (a slow line, where a partial is worth
	// keeping and a system call costs nothing beside the line).
	UnnamedMax int64
	// listedNames is how many names the directory listings hold, bounded
	// by listBudget (unnamed.go).
	listedNames atomic.Int64

	// Directories files are being received into, kept open so that each
	// file costs one-name operations (openat, renameat, fsync of the
	// directory) rather than a walk of its whole path per operation.
	mu   sync.Mutex
	dirs map[string]*dirHandle

	// Between BeginBatch and EndBatch, committed files wait here for one
	// flush that syncs them all (see BeginBatch). Used by the goroutine
	// that receives, like Create and Commit.
	batching bool
	pending  []*incoming
	// pendingSince is when the oldest of pending was committed: a batch
	// older than maxBatchAge is flushed at the next commit (QA q: on a
	// slow link a kill -9 lost up to 256 verified files a session).
	pendingSince time.Time
	pendingBytes int64           // the sizes announced of pending's files
	pendingN     map[string]bool // dir + "/" + tmp of pending files
	flushing     *flush          // a full batch being flushed in the background
	flushErr     error           // a finished background flush's first error, for EndBatch

	// notSaved holds the final names of batch files a flush failed to
	// make durable under them (Saved): what is under such a name may
	// be an older file. A name saved later leaves it. Flushes write it,
	// in the background too.
	notSavedMu sync.Mutex
	notSaved   map[string]bool
}

// flush is a batch handed to a background goroutine.
type flush struct {
	names map[string]bool // as pendingN
	done  chan struct{}
	err   error // set before done is closed
}

// Space returns the bytes free for an unprivileged user on the tree's
// file system (REMOTE SPACE).
func (d *Dir) Space() (int64, error) {
	var st unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Statfs(d.root.Name(), &st) }); err != nil {
		return 0, fmt.Errorf("filestore: free space: %w", err)
	}
	if st.Bsize <= 0 || int64(st.Bavail) > math.MaxInt64/int64(st.Bsize) {
		return math.MaxInt64, nil
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Path returns the host path of the tree's top.
func (d *Dir) Path() string { return d.root.Name() }

// CleanName checks a name a peer sent and returns it in clean,
// '/'-separated, relative form.
func CleanName(name string) (string, error) { return cleanName(name, naming) }

// nameUse is what a peer's name is resolved for.
type nameUse uint8

const (
	// naming: a name to store, serve or go into: CleanName's rules.
	naming nameUse = iota
	// removing: an entry to remove, which may be one no transfer
	// would store: a partial's name (see resolveToRemove), a control
	// character or a backslash in it (only a wildcard reached those,
	// QA).
	removing
	// renamingFrom: an entry to rename, a control character or a
	// backslash in it too (its new name is a naming one: a way to give
	// such a file a name a transfer takes, QA).
	renamingFrom
)

// cleanName is CleanName of a name resolved for use.
func cleanName(name string, use nameUse) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty", ErrUnsafeName)
	}
	for _, r := range name {
		if (framing.IsControl(r) || r == '\\') && use == naming {
			return "", fmt.Errorf("%w: %q contains a control character or backslash", ErrUnsafeName, name)
		}
	}
	partsOK := use == removing
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%w: %q is absolute", ErrUnsafeName, name)
	}
	for el := range strings.SplitSeq(name, "/") {
		if el == ".." {
			if climbsOut(name) {
				return "", fmt.Errorf("%w: %q leaves the tree", ErrUnsafeName, name)
			}
			// Never taken, even where it would stay inside: what
			// "a/.." is depends on what a is (a link?), and a name
			// means what it says.
			return "", fmt.Errorf("%w: %q has a \"..\" in it: give the path without it", ErrUnsafeName, name)
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", fmt.Errorf("%w: %q", ErrUnsafeName, name)
	}
	if err := checkDepth(c); err != nil {
		return "", err
	}
	for el := range strings.SplitSeq(c, "/") {
		// A directory so named too: its files would be stored where
		// a partial's name is, and a server's walk passes it over.
		if IsPartName(el) && !partsOK {
			return "", fmt.Errorf("%w: %q is the name of kerf's own partial file (of a transfer not finished), neither served nor stored under that name", ErrUnsafeName, name)
		}
	}
	return c, nil
}

// resolveDir resolves the argument of a change of directory: as resolve,
// but ".." steps up from the current directory (lexically, as a shell's
// cd does) as long as it stays inside the tree, and an empty argument
// is the top of the tree (C-Kermit's REMOTE CD with no argument). The
// directory is then used through os.Root, which no symlink can leave.
func (d *Dir) resolveDir(dir string) (string, error) {
	if dir == "" {
		return ".", nil
	}
	joined := dir
	if !strings.HasPrefix(dir, "/") {
		joined = d.cwd + "/" + dir
	}
	c := path.Clean("/" + joined) // a rooted Clean cannot climb above "/"
	if climbsOut(joined) {
		return "", fmt.Errorf("%w: %q leaves the tree", ErrUnsafeName, dir)
	}
	if c == "/" {
		return ".", nil
	}
	return CleanName(strings.TrimPrefix(c, "/"))
}

// climbsOut reports whether the '/'-separated path p, taken from the top
// of the tree, goes above it at some point.
func climbsOut(p string) bool {
	depth := 0
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

func (d *Dir) resolve(name string) (string, error) { return d.resolveAs(name, naming) }

// resolveToRemove is resolve taking names through a directory named as
// kerf's partials, or of one, which nothing stores or serves any more
// (CleanName) but which an older kerf may have stored, and its owner may
// want gone (REMOTE DELETE, RMDIR).
func (d *Dir) resolveToRemove(name string) (string, error) { return d.resolveAs(name, removing) }

func (d *Dir) resolveAs(name string, use nameUse) (string, error) {
	if name == "" || name == "." {
		return d.cwd, nil
	}
	if strings.HasPrefix(name, "/") {
		// Absolute names are taken relative to the top of the tree.
		name = strings.TrimLeft(name, "/")
		if name == "" {
			return ".", nil
		}
		c, err := cleanName(name, use)
		return c, err
	}
	c, err := cleanName(name, use)
	if err != nil {
		return "", err
	}
	if d.cwd == "." {
		return c, nil // clean already: what path.Join would make of it, without its copies
	}
	// (Deep under a deep current directory: the depth is the tree's.)
	c = path.Join(d.cwd, c)
	if err := checkDepth(c); err != nil {
		return "", err
	}
	return c, nil
}

// MaxDepth is the most levels a name may have (directories and the
// file): every path of the tree is taken by os.Root one level at a
// time, so a tree's cost grows with its depth squared, and one name
// 4,000 levels deep in a single packet cost a server 22 s of CPU (QA).
// Real trees stay far within it; PATH_MAX (4,096 bytes) allows about
// 2,000 levels.
const MaxDepth = 256

// ErrTooDeep is a name, or a directory of a walk, past MaxDepth.
var ErrTooDeep = fmt.Errorf("refused: deeper than %d levels", MaxDepth)

// levels is how many names rel, a clean relative path, has.
func levels(rel string) int { return strings.Count(rel, "/") + 1 }

// checkDepth refuses rel past MaxDepth.
func checkDepth(rel string) error {
	if n := levels(rel); n > MaxDepth {
		return fmt.Errorf("%w: a name %d levels deep", ErrTooDeep, n)
	}
	return nil
}

// ErrLeadsOutside is a path refused because it would leave the tree:
// through a symbolic link leading out, or "..". (os.Root's own words,
// "mkdirat x: statat x: path escapes from parent", said it once for
// every file under such a link.)
var ErrLeadsOutside = errors.New("refused: the path leads outside the directory (through a symbolic link or ..)")

// LeadsOutside reports whether err refuses a path for leaving the tree:
// ErrLeadsOutside, or os.Root's own refusal (which has no sentinel), as
// the methods that do not reword it return it.
func LeadsOutside(err error) bool {
	return err != nil && (errors.Is(err, ErrLeadsOutside) || strings.Contains(err.Error(), "path escapes from parent"))
}

// leadsOutside rewords os.Root's refusal of a path leaving the tree.
func leadsOutside(err error, name string) error {
	if LeadsOutside(err) && !errors.Is(err, ErrLeadsOutside) {
		return fmt.Errorf("filestore: %s: %w", name, ErrLeadsOutside)
	}
	return err
}
