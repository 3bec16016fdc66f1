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
// the ones just moved. MovedFiles remembers the removals of one scope
// (a sending client's run; a server's user: QA ab, a process-wide
// record told one user's link of another user's move), by inode and by
// path, so that a send of the file they removed is told from one whose
// file someone else removed or rewrote (the e2e test of a get with four
// sessions failed on it now and then: one session removed b.txt while
// another sent link.txt, which leads to it).
type MovedFiles struct {
	mu     sync.Mutex
	byID   map[[2]uint64]movedFile
	byPath map[string]movedFile
	order  []movedFile // oldest first, to forget beyond movedCap
}

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

// Note records that the file st (size bytes of mtime), sent as name,
// was removed from path (absolute, clean) just now. A nil m notes
// nothing.
func (m *MovedFiles) Note(st FileStatus, size int64, mtime time.Time, name, path string) {
	if m == nil || !st.Known {
		return
	}
	f := movedFile{size: size, mtime: mtime, removed: time.Now(), name: name, path: path}
	id := [2]uint64{st.Dev, st.Ino}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID, m.byPath = map[[2]uint64]movedFile{}, map[string]movedFile{}
	}
	m.byID[id] = f
	m.byPath[path] = f
	m.order = append(m.order, f)
	for len(m.order) > movedCap {
		old := m.order[0]
		m.order = m.order[1:]
		// Only if not recorded again since (the same inode, or path).
		for id, f := range m.byID {
			if f == old {
				delete(m.byID, id)
				break
			}
		}
		if m.byPath[old.path] == old {
			delete(m.byPath, old.path)
		}
	}
}

// earlier says whether the file st, of size bytes and mtime, is one
// removed (Note), and how.
func (m *MovedFiles) earlier(st FileStatus, size int64, mtime time.Time) (movedFile, bool) {
	if m == nil || !st.Known {
		return movedFile{}, false
	}
	m.mu.Lock()
	f, ok := m.byID[[2]uint64{st.Dev, st.Ino}]
	m.mu.Unlock()
	if !ok || f.size != size || !f.mtime.Equal(mtime) {
		return movedFile{}, false
	}
	return f, true
}

// From is the error for a symbolic link, met by a walk, that leads to
// path (absolute, clean), where nothing is now: a file moved from there
// (Note) makes it an entry passed over, saying so; otherwise nil.
func (m *MovedFiles) From(path string) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	f, ok := m.byPath[path]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return movedAlready(f)
}

// movedAlready is why an entry leading to f is passed over.
func movedAlready(f movedFile) error {
	return PassedOver(fmt.Sprintf("its file was moved already (sent as %s with --remove-source-files, then removed)", f.name))
}
