package kermit

import (
	"hash/maphash"
	"io/fs"
	"sync/atomic"
	"time"

	"kerf/framing"
)

// skipSet holds the files a resuming kerf client has whole (its
// kerf-skip text), for the GET that follows: by a keyed hash of the name
// as the F packet gives it, so that an entry costs the same whatever the
// name's length (about 80 bytes with the map's own: 21 MB for maxSkip). A collision could
// only leave out a file whose size, time and mode matched too; the key
// is the session's own, so a client cannot aim for one.
type skipSet struct {
	seed maphash.Seed
	m    map[uint64]skipFile
	// accountless: the session's login has no account of its own
	// (anonymous); its entries count in skipInUseAccountless too.
	accountless bool
}

// Accountless is a ServerFS that can say its session's login has no
// account of its own (anonymous access): anyone may open such sessions,
// so their skip lists share a bound of their own, one session's worth,
// and cannot take all of the process's from its users' GETs (QA ah: a
// few anonymous sessions that sent kerf-skip texts and never a GET held
// it).
type Accountless interface{ Accountless() bool }

type skipFile struct {
	size int64
	sec  int64
	nsec int32
	perm fs.FileMode
}

// Bounds of skip sets: entries a session may hold (those of a text
// under way included), and entries all sessions of the process may hold
// together. Lines past them are passed over, and their files sent.
const (
	maxSkip     = 1 << 18
	maxSkipAll  = 1 << 20
	maxSkipName = 4096
)

// skipInUse counts the entries of every session's skip sets, and
// skipInUseAccountless those of sessions without an account, which may
// hold maxSkip of them together.
var skipInUse, skipInUseAccountless atomic.Int64

func newSkipSet(seed maphash.Seed, accountless bool) *skipSet {
	return &skipSet{seed: seed, m: map[uint64]skipFile{}, accountless: accountless}
}

// take counts n entries (n < 0: gives them back) in the bounds; it
// reports whether they fit.
func (k *skipSet) take(n int64) bool {
	if k.accountless && skipInUseAccountless.Add(n) > maxSkip && n > 0 {
		skipInUseAccountless.Add(-n)
		return false
	}
	if skipInUse.Add(n) > maxSkipAll && n > 0 {
		skipInUse.Add(-n)
		if k.accountless {
			skipInUseAccountless.Add(-n)
		}
		return false
	}
	return true
}

func (k *skipSet) len() int {
	if k == nil {
		return 0
	}
	return len(k.m)
}

func (k *skipSet) key(name string) uint64 { return maphash.String(k.seed, name) }

// add puts e in the set, within the process's bound; it reports whether
// it did.
func (k *skipSet) add(e framing.ListingEntry) bool {
	if !e.Mode.IsRegular() {
		return false // never matches: not worth its room
	}
	key := k.key(e.Name)
	if _, dup := k.m[key]; !dup && !k.take(1) {
		return false
	}
	k.m[key] = skipFile{size: e.Size, sec: e.ModTime.Unix(), nsec: int32(e.ModTime.Nanosecond()), perm: e.Mode.Perm()}
	return true
}

// merge moves from's entries into k (same seed).
func (k *skipSet) merge(from *skipSet) {
	for key, f := range from.m {
		if _, dup := k.m[key]; dup {
			from.take(-1)
		}
		k.m[key] = f
	}
	from.m = nil
}

// drop gives the set's entries back to the process's bound.
func (k *skipSet) drop() {
	if k != nil {
		k.take(-int64(len(k.m)))
		k.m = nil
	}
}

// has reports whether the client has the file name whole: same size,
// modification time (framing.SameModTime) and permissions.
func (k *skipSet) has(name string, size int64, mt time.Time, perm fs.FileMode) bool {
	if k.len() == 0 {
		return false
	}
	f, ok := k.m[k.key(name)]
	return ok && f.size == size && f.perm == perm.Perm() && framing.SameModTime(time.Unix(f.sec, int64(f.nsec)), mt)
}
