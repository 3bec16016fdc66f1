package framing

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ListingEntry is one line of a kerf server's directory listing (the
// reply to REMOTE DIRECTORY, protocol.md §8): what ls -l shows of an
// entry, with its exact name.
type ListingEntry struct {
	Mode    fs.FileMode // type bits and permissions (setuid, setgid, sticky included)
	Size    int64
	ModTime time.Time // UTC, to the second
	Name    string    // exact; '/'-separated in a tree listing; no trailing "/"
	// Ino is the entry's inode number in a listing with inodes
	// (AppendListingLineIno), 0 when not known: what tells a file a
	// resume finds "already there" from the sender's own (protocol.md
	// §6, item 8).
	Ino uint64
}

// listingTime is the time layout of a listing line.
const listingTime = time.DateTime

// AppendListingLine appends e as one listing line: mode as ls -l writes
// it, size, UTC modification time, name ("/" after a directory's). A
// name with control characters or characters not seen as themselves
// (Unseen), not UTF-8, beginning with a double quote, or beginning or
// ending with a space (which a reader would not see) is written quoted with Go's escapes (strconv.Quote), so that a
// newline cannot forge an entry and every name comes back exact.
func AppendListingLine(b []byte, e ListingEntry) []byte {
	return appendListingLine(b, e, false)
}

// AppendListingLineExact is AppendListingLine with the time's fraction
// of a second after the seconds (".nnnnnnnnn", when not zero): the form
// of kerf's tree and GET listings and of a client's kerf-skip text,
// which only kerf peers that read it ask for (protocol.md §8).
func AppendListingLineExact(b []byte, e ListingEntry) []byte {
	return appendListingLine(b, e, true)
}

// AppendListingLineIno is AppendListingLineExact with the inode number
// after the time (" @N", 0 when unknown): the form two kerf peers that
// both set the inodes bit use for tree and GET listings and kerf-skip
// text (protocol.md §8). Only ParseListingLineIno reads it.
func AppendListingLineIno(b []byte, e ListingEntry) []byte {
	b = appendListingHead(b, e, true)
	b = append(b, " @"...)
	b = strconv.AppendUint(b, e.Ino, 10)
	return appendListingName(b, e)
}

// SameModTime reports whether a and b are one modification time for a
// quick check: equal, or the coarser of the two (by the trailing zeros
// of its fraction) is the other cut to its unit, as a file system, or a
// peer, that keeps less stores it: whole seconds (a classic Kermit, ext4
// with small inodes), 10 ms (exFAT), 100 ns (NTFS). (QA ad: exFAT kept
// 10 ms, and every file with a finer time was sent again at each
// --resume.) FAT's 2 s steps are not taken for the same: a time of an
// even second is as likely a peer's whole second.
func SameModTime(a, b time.Time) bool {
	if a.Equal(b) {
		return true
	}
	ua, ub := timeUnit(a), timeUnit(b)
	if ua == ub {
		return false
	}
	if ua > ub {
		a, b, ub = b, a, ua // b the coarser
	}
	d := a.Sub(b)
	return d > 0 && d < ub
}

// SameModTimeWithin is SameModTime, or a and b at most window apart
// (rsync's --modify-window: FAT keeps times in 2 s steps, and a file
// system on another machine may run on another clock).
func SameModTimeWithin(a, b time.Time, window time.Duration) bool {
	if SameModTime(a, b) {
		return true
	}
	d := a.Sub(b)
	return window > 0 && d <= window && d >= -window
}

// timeUnit is the largest power of ten of nanoseconds, up to a second,
// that t's fraction is a whole number of.
func timeUnit(t time.Time) time.Duration {
	u := time.Second
	for ns := t.Nanosecond(); u > 1 && ns%int(u) != 0; {
		u /= 10
	}
	return u
}

func appendListingLine(b []byte, e ListingEntry, exact bool) []byte {
	return appendListingName(appendListingHead(b, e, exact), e)
}

// appendListingHead appends a listing line's mode, size and time.
func appendListingHead(b []byte, e ListingEntry, exact bool) []byte {
	b = append(b, ModeString(e.Mode)...)
	b = append(b, ' ')
	size := strconv.FormatInt(e.Size, 10)
	for range 12 - len(size) {
		b = append(b, ' ')
	}
	b = append(b, size...)
	b = append(b, ' ')
	b = e.ModTime.UTC().AppendFormat(b, listingTime)
	if exact {
		b = appendNanos(b, e.ModTime)
	}
	return b
}

// appendListingName appends a listing line's name and its newline,
// quoted (Go's escapes) where it would not show what it is, or could
// not be given back as shown: a backslash escapes in a kerf remote
// path, so a name with one is quoted (QA ag: ls showed c\\d bare, and
// rm of that removed the file c\d).
func appendListingName(b []byte, e ListingEntry) []byte {
	b = append(b, ' ')
	if !utf8.ValidString(e.Name) || strings.HasPrefix(e.Name, `"`) || strings.IndexFunc(e.Name, IsControl) >= 0 || strings.Contains(e.Name, `\`) ||
		strings.IndexFunc(e.Name, Unseen) >= 0 || strings.HasPrefix(e.Name, " ") || strings.HasSuffix(e.Name, " ") {
		b = appendQuoted(b, e.Name)
	} else {
		b = append(b, e.Name...)
	}
	if e.Mode.IsDir() {
		b = append(b, '/')
	}
	return append(b, '\n')
}

// appendQuoted appends s quoted as strconv.Quote does, but with every
// rune Unseen reports as an escape (\uHHHH, \UHHHHHHHH), which Quote
// keeps as it is when Go counts it printable (the Hangul fillers, the
// combining grapheme joiner): quoted, a name must show what it holds to
// any reader (review). strconv.Unquote reads it back the same.
func appendQuoted(b []byte, s string) []byte {
	if strings.IndexFunc(s, Unseen) < 0 {
		return strconv.AppendQuote(b, s)
	}
	b = append(b, '"')
	for s != "" {
		i := strings.IndexFunc(s, Unseen)
		if i < 0 {
			i = len(s)
		}
		if i > 0 {
			q := strconv.AppendQuote(nil, s[:i])
			b = append(b, q[1:len(q)-1]...)
			s = s[i:]
			continue
		}
		r, n := utf8.DecodeRuneInString(s)
		if r > 0xffff {
			b = fmt.Appendf(b, `\U%08x`, r)
		} else {
			b = fmt.Appendf(b, `\u%04x`, r)
		}
		s = s[n:]
	}
	return append(b, '"')
}

// IsControl reports whether r is a control character (C0, DEL or C1),
// which no name kerf takes or writes bare may hold.
func IsControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }

// Unseen reports whether r, shown, would not be seen as itself: a
// format character (Unicode Cf: the bidirectional marks, embeddings,
// overrides and isolates, which reorder the text around them; zero-width
// spaces and joiners, the soft hyphen, the byte order mark, tag
// characters, which hide text), the line and paragraph separators, the
// combining grapheme joiner and the Hangul fillers, which show as
// nothing. A listing quotes a name with one, and kerf's terminal output
// escapes it, so that two names cannot look alike (QA r).
func Unseen(r rune) bool {
	switch r {
	case 0x2028, 0x2029, 0x034f, 0x115f, 0x1160, 0x3164, 0xffa0:
		return true
	}
	return r >= 0x80 && unicode.Is(unicode.Cf, r)
}

// MatchesWithin reports whether a regular file of size, modification
// time mt and permissions perm is the one e lists: the quick check
// (rsync's, with the permissions) of a resumed transfer's listings,
// times window apart taken for one (SameModTimeWithin).
func (e ListingEntry) MatchesWithin(size int64, mt time.Time, perm fs.FileMode, window time.Duration) bool {
	return e.Mode.IsRegular() && e.Size == size && SameModTimeWithin(e.ModTime, mt, window) && e.Mode.Perm() == perm.Perm()
}

// appendNanos appends t's fraction of a second as ".nnnnnnnnn" if it has
// one: how kerf writes it after the seconds, in listings and '#' dates.
func appendNanos(b []byte, t time.Time) []byte {
	if ns := t.Nanosecond(); ns != 0 {
		b = fmt.Appendf(b, ".%09d", ns)
	}
	return b
}

// ErrNotListing is the error of a line that is not in the form
// AppendListingLine writes (another Kermit server's listing, say).
var ErrNotListing = errors.New("framing: not a kerf listing line")

// ParseListingLine reads one line AppendListingLine wrote (without its
// newline).
func ParseListingLine(line string) (ListingEntry, error) {
	return parseListingLine(line, false)
}

// ParseListingLineIno reads one line AppendListingLineIno wrote.
func ParseListingLineIno(line string) (ListingEntry, error) {
	return parseListingLine(line, true)
}

func parseListingLine(line string, withIno bool) (ListingEntry, error) {
	bad := func(why string) (ListingEntry, error) {
		return ListingEntry{}, fmt.Errorf("%w (%s): %q", ErrNotListing, why, line)
	}
	if len(line) < 11 || line[10] != ' ' {
		return bad("mode")
	}
	mode, ok := parseLsMode(line[:10])
	if !ok {
		return bad("mode")
	}
	rest := strings.TrimLeft(line[11:], " ")
	sp := strings.IndexByte(rest, ' ')
	if sp <= 0 {
		return bad("size")
	}
	size, err := strconv.ParseInt(rest[:sp], 10, 64)
	if err != nil || size < 0 || rest[0] < '0' || rest[0] > '9' {
		return bad("size")
	}
	rest = rest[sp+1:]
	mt, n, ok := parseListingTime(rest)
	if !ok || len(rest) < n+2 {
		return bad("time")
	}
	rest = rest[n:]
	if rest[0] == '.' {
		// An exact line's fraction of a second: nine digits.
		if len(rest) < 11 {
			return bad("time")
		}
		ns := 0
		for _, c := range []byte(rest[1:10]) {
			if c < '0' || c > '9' {
				return bad("time")
			}
			ns = ns*10 + int(c-'0')
		}
		if ns == 0 {
			return bad("time") // written without a fraction
		}
		mt = mt.Add(time.Duration(ns))
		rest = rest[10:]
	}
	if rest[0] != ' ' || len(rest) < 2 {
		return bad("time")
	}
	var ino uint64
	if withIno {
		// " @N ": decimal digits, no sign, no leading zero but 0's.
		end := strings.IndexByte(rest[1:], ' ') + 1
		if end < 3 || rest[1] != '@' || rest[2] == '0' && end > 3 {
			return bad("inode")
		}
		var err error
		if ino, err = strconv.ParseUint(rest[2:end], 10, 64); err != nil {
			return bad("inode")
		}
		rest = rest[end:]
		if len(rest) < 2 {
			return bad("name")
		}
	}
	name := rest[1:]
	if strings.HasPrefix(name, `"`) {
		q, err := strconv.QuotedPrefix(name)
		if err != nil {
			return bad("quoted name")
		}
		tail := name[len(q):]
		name, _ = strconv.Unquote(q)
		if tail != "" && !(tail == "/" && mode.IsDir()) {
			return bad("quoted name")
		}
	} else if mode.IsDir() {
		name = strings.TrimSuffix(name, "/")
	}
	if name == "" {
		return bad("name")
	}
	return ListingEntry{Mode: mode, Size: size, ModTime: mt, Name: name, Ino: ino}, nil
}

// parseListingTime reads the time at the start of s as listingTime
// writes it, and says how long it was. The year has four digits or more,
// and a sign before the year 0: a file system that keeps 64-bit seconds
// (tmpfs, btrfs) holds times in year 10000 and after (`touch -d
// @253402300800`), and time.Format writes them so, where time.Parse
// takes four digits only (review: one such file made ls fail).
func parseListingTime(s string) (t time.Time, n int, ok bool) {
	digits := 0
	if strings.HasPrefix(s, "-") {
		n = 1
	}
	for n+digits < len(s) && s[n+digits] >= '0' && s[n+digits] <= '9' {
		digits++
	}
	if digits < 4 || digits > 12 {
		return time.Time{}, 0, false
	}
	year, err := strconv.Atoi(s[:n+digits])
	n += digits
	const rest = len(listingTime) - 4 // "-01-02 15:04:05"
	if err != nil || len(s) < n+rest {
		return time.Time{}, 0, false
	}
	// The rest in year 2000 (a leap year: 29 February parses), moved to
	// the year read.
	t, err = time.Parse(listingTime, "2000"+s[n:n+rest])
	if err != nil || year != 2000 && t.Month() == time.February && t.Day() == 29 && !isLeap(year) {
		return time.Time{}, 0, false
	}
	return t.AddDate(year-2000, 0, 0), n + rest, true
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// A ListingProblem is a tree listing's line for an entry whose contents
// could not be listed (a directory the server may not read): the listing
// is then not the whole tree, and a client that asked for these lines
// says so (kerf ls -R, protocol.md §8).
type ListingProblem struct {
	Name  string // as a listing line names the entry
	Cause string // one line, no control characters ("permission denied")
}

// AppendListingProblem appends p as one line: "!", a space, the name
// quoted with Go's escapes (strconv.Quote, whatever it holds, so that the
// cause after it is found), a space and the cause, its control characters
// made spaces. No listing line begins with "!".
func AppendListingProblem(b []byte, p ListingProblem) []byte {
	b = append(b, "! "...)
	b = strconv.AppendQuote(b, p.Name)
	b = append(b, ' ')
	for _, r := range p.Cause {
		if IsControl(r) {
			r = ' '
		}
		b = utf8.AppendRune(b, r)
	}
	return append(b, '\n')
}

// ParseListingProblem reads one line AppendListingProblem wrote (without
// its newline).
func ParseListingProblem(line string) (ListingProblem, error) {
	bad := func(why string) (ListingProblem, error) {
		return ListingProblem{}, fmt.Errorf("%w (%s): %q", ErrNotListing, why, line)
	}
	rest, ok := strings.CutPrefix(line, "! ")
	if !ok {
		return bad("problem")
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return bad("quoted name")
	}
	name, _ := strconv.Unquote(q)
	cause, ok := strings.CutPrefix(rest[len(q):], " ")
	if !ok || name == "" || cause == "" || !utf8.ValidString(cause) || strings.IndexFunc(cause, IsControl) >= 0 {
		return bad("problem")
	}
	return ListingProblem{Name: name, Cause: cause}, nil
}

// ParseTreeListing reads a whole tree listing that may hold problem
// lines (AppendListingProblem) among its entries, those with inode
// numbers if withIno. Like ParseListing, it fails on the first line in
// neither form.
func ParseTreeListing(text string, withIno bool) ([]ListingEntry, []ListingProblem, error) {
	var entries []ListingEntry
	var problems []ListingProblem
	for line := range listingLines(text) {
		if strings.HasPrefix(line, "!") {
			p, err := ParseListingProblem(line)
			if err != nil {
				return nil, nil, err
			}
			problems = append(problems, p)
			continue
		}
		e, err := parseListingLine(line, withIno)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	return entries, problems, nil
}

// listingLines yields the lines of a listing's text, without their
// line ends (CRLF, as a text transaction may bring them, or LF).
func listingLines(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
		if text == "" {
			return
		}
		for line := range strings.SplitSeq(text, "\n") {
			if !yield(line) {
				return
			}
		}
	}
}

// ParseListing reads a whole listing. It fails on the first line not in
// kerf's form: a half-read listing would silently drop names.
func ParseListing(text string) ([]ListingEntry, error) {
	return parseListing(text, false)
}

// ParseListingIno reads a whole listing of AppendListingLineIno's lines.
func ParseListingIno(text string) ([]ListingEntry, error) {
	return parseListing(text, true)
}

func parseListing(text string, withIno bool) ([]ListingEntry, error) {
	var out []ListingEntry
	for line := range listingLines(text) {
		e, err := parseListingLine(line, withIno)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// lsTypes are ls -l's type letters and the modes they stand for.
var lsTypes = []struct {
	c byte
	m fs.FileMode
}{{'-', 0}, {'d', fs.ModeDir}, {'l', fs.ModeSymlink}, {'p', fs.ModeNamedPipe},
	{'s', fs.ModeSocket}, {'c', fs.ModeDevice | fs.ModeCharDevice}, {'b', fs.ModeDevice}, {'?', fs.ModeIrregular}}

// ModeString writes m as ls -l does: the type letter (- d l p s c b, ?
// for anything else) and the permissions, with setuid, setgid and sticky
// in the execute places (s S t T).
func ModeString(m fs.FileMode) string {
	var b [10]byte
	b[0] = '?'
	for _, t := range lsTypes {
		if m.Type() == t.m {
			b[0] = t.c
			break
		}
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		b[1+i] = '-'
		if m&(1<<(8-i)) != 0 {
			b[1+i] = rwx[i]
		}
	}
	special := func(i int, on bool, set, unset byte) {
		if !on {
			return
		}
		if b[i] == 'x' {
			b[i] = set
		} else {
			b[i] = unset
		}
	}
	special(3, m&fs.ModeSetuid != 0, 's', 'S')
	special(6, m&fs.ModeSetgid != 0, 's', 'S')
	special(9, m&fs.ModeSticky != 0, 't', 'T')
	return string(b[:])
}

// parseLsMode reads what ModeString writes.
func parseLsMode(s string) (fs.FileMode, bool) {
	var m fs.FileMode
	found := false
	for _, t := range lsTypes {
		if s[0] == t.c {
			m, found = t.m, true
			break
		}
	}
	if !found {
		return 0, false
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		bit := fs.FileMode(1) << (8 - i)
		switch c := s[1+i]; {
		case c == '-':
		case c == rwx[i]:
			m |= bit
		case i%3 == 2 && c == "sst"[i/3]:
			m |= bit | specialBits[i/3]
		case i%3 == 2 && c == "SST"[i/3]:
			m |= specialBits[i/3]
		default:
			return 0, false
		}
	}
	return m, true
}

// specialBits are the bits shown in the user's, group's and others'
// execute places.
var specialBits = [3]fs.FileMode{fs.ModeSetuid, fs.ModeSetgid, fs.ModeSticky}
