package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/kermit"
)

var removeSourceFlag = &cli.BoolFlag{Name: "remove-source-files", Usage: "remove each file sent once the receiver has it saved (a kerf server's word; a classic Kermit's ACK of the file's end), and each a --resume finds there whole (not when that may be this very file: a server on this machine, or its copy of this file's inode number, on a shared file system), if unchanged since it was sent (a move, as rsync's option and Kermit's SEND /DELETE; directories stay); a move into the very directory it comes from, seen through a shared file system, is refused before anything is sent"}

// getRemoveSourceFlag is the get's: the server removes each file.
var getRemoveSourceFlag = &cli.BoolFlag{Name: removeSourceFlag.Name, Usage: "ask a kerf server to remove each file once this side has it saved, and each a --resume finds here whole (not when that may be its very file: the server on this machine, or a copy of its file's inode number, on a shared file system), if unchanged since it was listed (a move; the user must be allowed to delete; directories stay; what it keeps is in the server's log); a move into the very directory it comes from, seen through a shared file system, is refused before anything is fetched"}

// runMoved is what this run's --remove-source-files removed: a link to
// one of those files, met after, is passed over (its file went under
// its own name), and one sent while it went is not taken for changed.
// One run a process: the scope is the run's.
var runMoved kermit.MovedFiles

// sourceRemover removes each sent file once the receiver has it
// (send --remove-source-files: rsync's option, Kermit's SEND /DELETE):
// a kerf receiver's word that it is saved under its name (FileSaved), a
// classic Kermit's ACK of its Z (FileDone, Final), or a resume's finding
// it there whole. Only the very file sent goes, unchanged: the same
// inode, size, modification time and ctime as when it was sent (rsync
// checks size and time); a changed file, a link, or one that cannot be
// removed stays, and is named. Directories stay.
type sourceRemover struct {
	started map[string]sentSource // by local path, from FileStart
	// kept is told of each file that stays, and why.
	kept func(name, path, why string)
	// removed is told of each file removed.
	removed func(name, path string)
	// local: the server runs on this machine (control.Client.OnThisHost).
	local bool
}

// sentSource is a file as it was when its sending began.
type sentSource struct {
	size       int64
	mtime      time.Time
	status     kermit.FileStatus // which file (not Known: not checked)
	ctime      time.Time         // zero: not checked
	notRegular string            // why it will stay ("" if it may go)
}

func newSourceRemover(kept func(name, path, why string), removed func(name, path string)) *sourceRemover {
	return &sourceRemover{started: map[string]sentSource{}, kept: kept, removed: removed}
}

// event follows a sending session's events.
func (m *sourceRemover) event(e kermit.Event) {
	if !e.Sending || e.Path == "" {
		return
	}
	switch e.Kind {
	case kermit.FileStart:
		// The engine fails a file whose size, time or ctime moved
		// between its listing and the end of its data; what is seen
		// here, in between, is then the listed file.
		m.started[e.Path] = look(e.Path, e.Size, e.ModTime)
	case kermit.FileSaved:
		if s, ok := m.started[e.Path]; ok {
			delete(m.started, e.Path)
			m.remove(e.Name, e.Path, s, true)
		}
	case kermit.FileDone:
		if s, ok := m.started[e.Path]; ok && e.Final {
			delete(m.started, e.Path)
			if e.Offset > 0 {
				// A classic receiver's RESEND: what it said it had was
				// taken on its word (its length alone; no check of the
				// whole file), so this is no verified copy to remove the
				// only other one for (QA: a same-length older file there
				// had the source removed with nothing sent).
				why := fmt.Sprintf("the classic Kermit receiver went on from byte %d, which it said it had: no check confirms its copy", e.Offset)
				if e.Size >= 0 && e.Offset >= e.Size {
					why = "the classic Kermit receiver said it had the whole file: no check confirms its copy"
				}
				m.kept(e.Name, e.Path, why)
				break
			}
			m.remove(e.Name, e.Path, s, true)
		}
	case kermit.FileSkipped:
		delete(m.started, e.Path)
		if !errors.Is(e.Err, kermit.ErrAlreadyThere) {
			break
		}
		switch {
		case m.local:
			// What a server on this machine has may be this very file,
			// reached by another path (QA: send --resume of a file in
			// the server's own tree removed the only copy).
			m.kept(e.Name, e.Path, "the server, on this machine, has it already, and that may be this very file")
		case e.ThereIno != 0 && inodeOf(e.Path) == e.ThereIno:
			// The same through a file system both machines mount
			// (NFS): one file, one inode number on both.
			m.kept(e.Name, e.Path, "the server's copy has this file's inode number, so it may be this very file on a file system both machines share")
		default:
			// The receiver has it, of this size and time: gone from
			// here as a file sent would be (rsync removes these too,
			// so that a move interrupted and run again completes).
			m.remove(e.Name, e.Path, sentSource{size: e.Size, mtime: e.ModTime}, false)
		}
	case kermit.FileFailed:
		delete(m.started, e.Path)
	}
}

// inodeOf is path's inode number (not following a link), or 0.
func inodeOf(path string) uint64 {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	return kermit.StatusOf(fi).Ino
}

// look records what path is now, to be sent as size bytes of mtime.
func look(path string, size int64, mtime time.Time) sentSource {
	s := sentSource{size: size, mtime: mtime}
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		s.notRegular = "not found when its sending began"
	case fi.Mode()&fs.ModeSymlink != 0:
		s.notRegular = "a symbolic link (its target was sent)"
	case !fi.Mode().IsRegular():
		s.notRegular = "not a regular file"
	default:
		s.status, s.ctime = kermit.StatusOf(fi), kermit.ChangeTimeOf(fi)
	}
	return s
}

// remove removes path if it is still the file s describes.
func (m *sourceRemover) remove(name, path string, s sentSource, sent bool) {
	if s.notRegular != "" {
		m.kept(name, path, s.notRegular)
		return
	}
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return // gone already (sent under two names, say)
		}
		m.kept(name, path, err.Error())
		return
	}
	if !sent {
		// Found there whole by a resume, never opened here: the size
		// and time it was listed with are all there is to compare.
		s.status, s.ctime = kermit.FileStatus{}, time.Time{}
	}
	if why := kermit.ChangedSinceSent(fi, s.size, s.mtime, s.status, s.ctime); why != "" {
		m.kept(name, path, why)
		return
	}
	if err := os.Remove(path); err != nil {
		m.kept(name, path, fmt.Sprint(errors.Unwrap(err))) // (said "kept here, not removed: ...")
		return
	}
	if abs, err := filepath.Abs(path); err == nil && sent {
		// A link to it, sent after, is told from a file gone by itself.
		runMoved.Note(s.status, s.size, s.mtime, s.ctime, name, abs)
	}
	if m.removed != nil {
		m.removed(name, path)
	}
}
