package kermit

import (
	"fmt"
	"sync"
	"time"
)

// A --remove-source-files (a server's sentRemoval, a sending client's)
// removes a file once its receiver has it saved; the same file may be
// sent again under another name of the tree, a symbolic link to it,
// which a walk follows. That send is no changed file: its bytes are
// the ones just moved. The removals of this process are remembered
// here, by inode, so that a send of the file they removed is told from
// one whose file someone else removed or rewrote (the e2e test of a get
// with four sessions failed on it now and then: one session removed
// b.txt while another sent link.txt, which leads to it).

// movedFile is a file removed after it was sent whole.
type movedFile struct {
	size  int64
	mtime time.Time
	// removed is when its removal returned: its ctime is no later, and
	// one written through an open descriptor since is later.
	removed time.Time
	name    string // as sent
	path    string // where it was, absolute
}

// movedCap bounds what is remembered: a link met long after its file
// moved fails as a link to nothing, as any other.
const movedCap = 4096

var moved struct {
	mu     sync.Mutex
	byID   map[[2]uint64]movedFile
	byPath map[string]movedFile
	order  []movedFile // oldest first, to forget beyond movedCap
}

// NoteMoved records that the file st (size bytes of mtime), sent as
// name, was removed from path (absolute, clean) just now by a
// --remove-source-files.
func NoteMoved(st FileStatus, size int64, mtime time.Time, name, path string) {
	if !st.Known {
		return
	}
	m := movedFile{size: size, mtime: mtime, removed: time.Now(), name: name, path: path}
	id := [2]uint64{st.Dev, st.Ino}
	moved.mu.Lock()
	defer moved.mu.Unlock()
	if moved.byID == nil {
		moved.byID, moved.byPath = map[[2]uint64]movedFile{}, map[string]movedFile{}
	}
	moved.byID[id] = m
	moved.byPath[path] = m
	moved.order = append(moved.order, m)
	for len(moved.order) > movedCap {
		old := moved.order[0]
		moved.order = moved.order[1:]
		// Only if not recorded again since (the same inode, or path).
		for id, m := range moved.byID {
			if m == old {
				delete(moved.byID, id)
				break
			}
		}
		if moved.byPath[old.path] == old {
			delete(moved.byPath, old.path)
		}
	}
}

// movedEarlier says whether the file st, of size bytes and mtime, is
// one this process removed after sending it, and the name it went as.
func movedEarlier(st FileStatus, size int64, mtime time.Time) (movedFile, bool) {
	if !st.Known {
		return movedFile{}, false
	}
	moved.mu.Lock()
	m, ok := moved.byID[[2]uint64{st.Dev, st.Ino}]
	moved.mu.Unlock()
	if !ok || m.size != size || !m.mtime.Equal(mtime) {
		return movedFile{}, false
	}
	return m, true
}

// MovedFrom is the error for a symbolic link, met by a walk, that
// leads to path (absolute, clean), where nothing is now: a file this
// process moved from there (--remove-source-files), sent already,
// makes it an entry passed over, saying so; otherwise nil.
func MovedFrom(path string) error {
	moved.mu.Lock()
	m, ok := moved.byPath[path]
	moved.mu.Unlock()
	if !ok {
		return nil
	}
	return movedAlready(m)
}

// movedAlready is why an entry leading to m is passed over.
func movedAlready(m movedFile) error {
	return PassedOver(fmt.Sprintf("its file was moved already (sent as %s with --remove-source-files, then removed)", m.name))
}
