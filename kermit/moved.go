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
	seq    uint64
}

// movedFile is a file removed after it was sent whole.
type movedFile struct {
	id    [2]uint64 // device, inode
	seq   uint64    // which Note: a later one of the same inode or path replaces it
	size  int64
	mtime time.Time
	// ctime is its change time before the removal: a file given its
	// inode number since has another (review 52: ext4 reuses a number
	// at once, and the coarse clock gives the new file a ctime no
	// later than the removal's).
	ctime time.Time
	// removed is when its removal returned: its ctime is no later, and
	// one written through an open descriptor since is later.
	removed time.Time
	name    string // as sent
	path    string // where it was, absolute
}

// movedCap bounds what is remembered: a link met long after its file
// moved fails as a link to nothing, as any other.
const movedCap = 4096

// Note records that the file st (size bytes of mtime, change time
// ctime before its removal), sent as name, was removed from path
// (absolute, clean) just now. A nil m notes nothing.
func (m *MovedFiles) Note(st FileStatus, size int64, mtime, ctime time.Time, name, path string) {
	if m == nil || !st.Known || ctime.IsZero() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID, m.byPath = map[[2]uint64]movedFile{}, map[string]movedFile{}
	}
	m.seq++
	f := movedFile{id: [2]uint64{st.Dev, st.Ino}, seq: m.seq, size: size, mtime: mtime, ctime: ctime, removed: time.Now(), name: name, path: path}
	m.byID[f.id] = f
	m.byPath[path] = f
	m.order = append(m.order, f)
	if len(m.order) > movedCap {
		old := m.order[0]
		m.order = m.order[1:]
		// Only if not recorded again since (the same inode, or path).
		if m.byID[old.id].seq == old.seq {
			delete(m.byID, old.id)
		}
		if m.byPath[old.path].seq == old.seq {
			delete(m.byPath, old.path)
		}
	}
}

// earlier says whether the file st, of size bytes, mtime and change
// time ctime (as listed, or as opened), is one removed (Note) as it
// was then, and how.
func (m *MovedFiles) earlier(st FileStatus, size int64, mtime, ctime time.Time) (movedFile, bool) {
	if m == nil || !st.Known {
		return movedFile{}, false
	}
	m.mu.Lock()
	f, ok := m.byID[[2]uint64{st.Dev, st.Ino}]
	m.mu.Unlock()
	if !ok || f.size != size || !f.mtime.Equal(mtime) || !f.ctime.Equal(ctime) {
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
