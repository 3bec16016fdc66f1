package kermit

import (
	"errors"
	"log/slog"
	"sync"
)

// removeSourceParam is kerf's REMOTE SET parameter asking a server to
// remove each file of the next GET once the client has it saved
// (protocol.md §8): a fetching client's --remove-source-files.
const removeSourceParam = "kerf-remove-source-files"

// ErrNoRemoveSource is why a GET with --remove-source-files failed
// before it began: the server will not remove what it sends (a user
// who may not delete, an older kerf, another Kermit).
var ErrNoRemoveSource = errors.New("the server will not remove the files it sends (--remove-source-files)")

// SentRemover is an optional extension of a ServerFS: it removes a file
// a GET sent (f, as listed; its Path), if the file is still the one
// listed (REMOTE SET kerf-remove-source-files).
type SentRemover interface {
	// CanRemoveSent says why this session may not remove files (a
	// read-only user), or nil.
	CanRemoveSent() error
	RemoveSent(f OutgoingFile) error
}

// sentRemoval removes the files of one GET as the client says it has
// them saved (FileSaved), or already had them whole (FileSkipped,
// ErrAlreadyThere: a fetch run again after one interrupted completes
// the move), each as it was listed when taken to be sent.
type sentRemoval struct {
	fs    SentRemover
	mu    sync.Mutex
	taken map[string]OutgoingFile // by Path, from the walk
	log   *slog.Logger
	// local: the client runs on this machine (Config.PeerLocal).
	local bool
}

// source wraps src so that each file taken from it is remembered.
func (r *sentRemoval) source(src fileSource) fileSource {
	next := src.next
	src.next = func() (OutgoingFile, bool) {
		f, ok := next()
		if ok && !f.Dir && f.Path != "" {
			r.mu.Lock()
			r.taken[f.Path] = f
			r.mu.Unlock()
		}
		return f, ok
	}
	return src
}

// event follows the sending session's events, then tells tell.
func (r *sentRemoval) event(tell func(Event)) func(Event) {
	return func(e Event) {
		if tell != nil {
			tell(e)
		}
		if !e.Sending || e.Path == "" {
			return
		}
		switch e.Kind {
		case FileSaved, FileSkipped, FileFailed:
		default:
			return
		}
		r.mu.Lock()
		f, ok := r.taken[e.Path]
		delete(r.taken, e.Path)
		r.mu.Unlock()
		if !ok || !(e.Kind == FileSaved || e.Kind == FileSkipped && errors.Is(e.Err, ErrAlreadyThere)) {
			return
		}
		if e.Kind == FileSkipped && r.local {
			// Found whole by a client on this machine: what it has may
			// be this very file, reached by another path.
			r.log.Warn("a file sent is kept: the client, on this machine, found it already there, which may be this very file", "path", f.Path)
			return
		}
		if e.Kind == FileSkipped && e.ThereIno != 0 && (!f.Status.Known || f.Status.Ino == e.ThereIno) {
			// The client's copy has this file's inode number: it may be
			// this very file, on a file system both machines mount.
			r.log.Warn("a file sent is kept: the client found it already there under this file's inode number, so it may be this very file on a shared file system", "path", f.Path, "inode", e.ThereIno)
			return
		}
		if err := r.fs.RemoveSent(f); err != nil {
			r.log.Warn("a file sent is kept: the client has it saved, but it was not removed", "path", f.Path, "err", err)
			return
		}
		r.log.Info("a file sent is removed: the client has it saved", "path", f.Path)
	}
}
