package kermit

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// removeSourceParam is kerf's REMOTE SET parameter asking a server to
// remove each file of the next GET once the client has it saved
// (protocol.md §8): a fetching client's --remove-source-files.
const removeSourceParam = "kerf-remove-source-files"

// keptReportParam is kerf's REMOTE SET parameter by which a client asks,
// after a GET with removeSourceParam, which files the server kept and
// why: the answer's text has a line a file, its path (as listed, from
// the user's root), a tab, the reason (protocol.md §8).
const keptReportParam = "kerf-kept-sources"

// maxKeptReported bounds the files a server remembers as kept for the
// client's report; a last line "keptMoreTag<TAB>N more" counts the rest.
const maxKeptReported = 1000

// keptMoreTag begins the kept report's line that counts the files past
// maxKeptReported: a control character, in no name a kerf serves.
const keptMoreTag = "\x01more"

// noteKeptSource remembers a file the GET under way kept, for the
// client's report.
func (s *Session) noteKeptSource(path, why string) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if len(s.keptSources) >= maxKeptReported {
		s.keptMore++
		return
	}
	s.keptSources = append(s.keptSources, path+"\t"+why)
}

// keptReport is the answer to keptReportParam: the files the last GET
// kept, a line each, which it forgets.
func (s *Session) keptReport() []byte {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	var b strings.Builder
	for _, k := range s.keptSources {
		b.WriteString(k + "\n")
	}
	if s.keptMore > 0 {
		fmt.Fprintf(&b, "%s\t%d more\n", keptMoreTag, s.keptMore)
	}
	s.keptSources, s.keptMore = nil, 0
	return []byte(b.String())
}

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
	// kept, if set, is told each file kept, and why.
	kept func(path, why string)
}

// keep notes that f stays, for why.
func (r *sentRemoval) keep(f OutgoingFile, why string) {
	if r.kept != nil {
		r.kept(f.Name, why)
	}
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
			r.keep(f, "the client, on the server's machine, found it already there, which may be this very file")
			return
		}
		if e.Kind == FileSkipped && e.ThereIno != 0 && (!f.Status.Known || f.Status.Ino == e.ThereIno) {
			// The client's copy has this file's inode number: it may be
			// this very file, on a file system both machines mount.
			r.log.Warn("a file sent is kept: the client found it already there under this file's inode number, so it may be this very file on a shared file system", "path", f.Path, "inode", e.ThereIno)
			r.keep(f, "the client found it already there under this file's inode number: it may be this very file, on a file system both machines mount")
			return
		}
		if err := r.fs.RemoveSent(f); err != nil {
			r.log.Warn("a file sent is kept: the client has it saved, but it was not removed", "path", f.Path, "err", err)
			r.keep(f, err.Error())
			return
		}
		r.log.Info("a file sent is removed: the client has it saved", "path", f.Path)
	}
}
