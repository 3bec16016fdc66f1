package kermit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
	"sync"

	"kerf/framing"
)

// Get asks a Kermit server for the files matching spec (GET) and
// receives them into store.
func (s *Session) Get(ctx context.Context, spec string, recursive bool, store Store) error {
	return s.GetWith(ctx, spec, GetOptions{Recursive: recursive}, store)
}

// GetOptions modify a GET.
type GetOptions struct {
	Recursive bool // directories stand for their trees (V packet)
	Resume    bool // recover partial files (REGET, J packet; recursive too)
	// Skip lists files the client has whole (from GetListing, by the
	// names the F packets give them), for a kerf server to leave out
	// of the GET if they are still the same; each one left out is
	// reported as FileSkipped (ErrAlreadyThere).
	Skip []framing.ListingEntry
	// Exclude are patterns (Exclusions) of files a kerf server leaves
	// out; a server that does not take them fails the GET.
	Exclude []string
	// Congestion is the TCP congestion control a kerf server is asked to
	// send the files with (REMOTE SET kerf-congestion): on a fetch the
	// sender's is what counts. A server that will not is noted in the
	// log, and sends with its own.
	Congestion string
	// RemoveSource asks a kerf server to remove each file once this
	// side has it saved, or had it whole (REMOTE SET
	// kerf-remove-source-files); a server that will not fails the GET
	// before it begins (ErrNoRemoveSource).
	RemoveSource bool
	// Reconnect, if set, follows each session lost on the way with a
	// successor of its own, which asks for its files (its share) again,
	// resuming.
	Reconnect *Reconnect
	// congestionTold, shared by the sessions of one GetParallel, makes
	// a refusal of Congestion noted once, not once a session.
	congestionTold *sync.Once
}

// ErrNoExclude is why a GET with exclusions failed: the server does not
// take them (a kerf from before them, or another Kermit).
var ErrNoExclude = errors.New("the server does not leave files out of a GET (--exclude): an older kerf, or not kerf")

// GetWith is Get with options.
func (s *Session) GetWith(ctx context.Context, spec string, o GetOptions, store Store) error {
	defer s.flush()
	if len(o.Skip) > 0 {
		told, err := s.sendSkip(ctx, o.Skip)
		if err != nil {
			return s.abort(err)
		}
		if told {
			defer s.reportSkipped(o.Skip)()
		}
	}
	if _, err := ParseExclusions(o.Exclude); err != nil {
		return err
	}
	for _, p := range o.Exclude {
		if _, err := s.Generic(ctx, 'S', excludeParam, p); err != nil {
			var pe *PeerError
			if errors.As(err, &pe) {
				return fmt.Errorf("%w: %v", ErrNoExclude, err)
			}
			return err
		}
	}
	if o.RemoveSource {
		if _, err := s.Generic(ctx, 'S', removeSourceParam, "on"); err != nil {
			var pe *PeerError
			if errors.As(err, &pe) {
				// Any session would be refused alike: not a loss.
				return &RefusedGetError{fmt.Errorf("%w: %w", ErrNoRemoveSource, err)}
			}
			return err
		}
	}
	if o.Congestion != "" {
		if _, err := s.genericAfterInit(ctx, 'S', congestionParam, o.Congestion); err != nil {
			var pe *PeerError
			if !errors.As(err, &pe) {
				return err
			}
			note := func() {
				s.cfg.Log.Warn("the server sends with its own TCP congestion control", "asked", o.Congestion, "why", pe.Msg)
			}
			if o.congestionTold != nil {
				o.congestionTold.Do(note)
			} else {
				note()
			}
		}
	}
	if err := s.initServer(ctx); err != nil {
		return s.abort(err)
	}
	typ := byte('R')
	switch {
	case o.Resume:
		typ = 'J' // REGET; kerf's server also recurses into directories
	case o.Recursive:
		typ = 'V' // C-Kermit's GET /RECURSIVE
	}
	sl, err := s.request(ctx, typ, []byte(spec))
	if err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && !s.dataNotArrived(pe) {
			err = &RefusedGetError{err}
		}
		return s.abort(err)
	}
	if sl.ackType != 'S' {
		return s.abort(fmt.Errorf("%w: server answered GET with %q", ErrProtocol, sl.ackType))
	}
	if err := s.takeServerInit(ctx, sl); err != nil {
		return s.abort(err)
	}
	if err := s.recvGroup(ctx, store, nil, true); err != nil {
		return s.abort(err)
	}
	if o.RemoveSource {
		// The server removes each file as it hears this side has it
		// saved (the B's ACK), before it takes the next command: one
		// more exchange, and the removals are done when the get ends.
		// It asks which files the server kept (QA ar: a move that
		// moved nothing ended silent, exit 0); a kerf from before the
		// question refuses it, which confirms the removals all the same.
		report, err := s.Generic(ctx, 'S', keptReportParam, "")
		var pe *PeerError
		switch {
		case errors.As(err, &pe):
		case err != nil:
			s.cfg.Log.Warn("the server's removals after the GET are not confirmed", "err", err)
		default:
			s.tellKept(report)
		}
	}
	return nil
}

// tellKept reports each file of a server's kept report (keptReportParam)
// as SourceKept.
func (s *Session) tellKept(report string) {
	for line := range strings.Lines(report) {
		name, why, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok {
			continue
		}
		if name == keptMoreTag {
			s.cfg.Log.Warn("more files the server was to remove are kept there, not named", "files", why)
			continue
		}
		s.event(Event{Kind: SourceKept, Name: name, Size: -1, Err: errors.New(why)})
	}
}

// dataNotArrived reports whether pe is a kerf server's word that the
// data connections this side opened did not reach it (ErrDataNotArrived).
func (s *Session) dataNotArrived(pe *PeerError) bool {
	return s.data != nil && strings.HasPrefix(pe.Msg, errOpeningData.Error()+": "+ErrDataNotArrived.Error())
}

// RefusedGetError is a GET the server answered with an E before any
// file (no such file, not a regular file): asked again, by another
// session too, it would refuse again. It wraps the PeerError.
type RefusedGetError struct{ Err error }

func (e *RefusedGetError) Error() string { return e.Err.Error() }
func (e *RefusedGetError) Unwrap() error { return e.Err }

// Generic sends a REMOTE (G) command and returns the server's reply text.
// cmd is the generic command letter (D directory, C cwd, E delete, m
// mkdir, d rmdir, R rename, F finish, L bye, A pwd).
func (s *Session) Generic(ctx context.Context, cmd byte, args ...string) (string, error) {
	if s.cfg.ShortWithoutI && (cmd == 'C' || cmd == 'm' || cmd == 'S') {
		reply, err := s.GenericWithDefaults(ctx, cmd, args...)
		if !errors.Is(err, ErrFieldTooLong) {
			return reply, err
		}
	}
	defer s.forText()()
	return s.genericAfterInit(ctx, cmd, args...)
}

// genericAfterInit is Generic with the data channel offered in its I (a
// command about the data connections, such as the congestion control a
// GET asks for, needs them open).
func (s *Session) genericAfterInit(ctx context.Context, cmd byte, args ...string) (string, error) {
	defer s.flush()
	if err := s.initServer(ctx); err != nil {
		return "", s.abort(err)
	}
	return s.generic(ctx, cmd, args...)
}

// GenericWithDefaults is Generic without the optional I exchange: the
// command and its answer use the protocol's defaults (type 1 checks,
// packets of at most 94 bytes, no repeat or 8th-bit prefixes), as a
// server takes a command no I came before. One round trip fewer: a
// client's REMOTE LOGIN, which fits a short packet by design, goes with
// the TLS handshake's last flight. The session learns nothing of the
// peer from it (PeerIsKerf stays as it was).
//
// A command too long for a short packet fails with ErrFieldTooLong and
// nothing sent: Generic, whose I exchange agrees on long packets, then
// carries it.
func (s *Session) GenericWithDefaults(ctx context.Context, cmd byte, args ...string) (string, error) {
	defer s.flush()
	defer s.forText()()
	s.resetNegotiation()
	s.initRefusal = nil
	if _, err := s.encodeField(encodeGenericArgs(cmd, args)); err != nil {
		return "", err
	}
	return s.generic(ctx, cmd, args...)
}

// forText marks the command under way as one answered with text (the
// reply of a REMOTE command, a listing), which needs no data channel:
// its I and the ACK of the server's S leave the dual-channel bit out, so
// that no data connection is opened for it (three round trips: a TCP
// connect, a TLS handshake, the pairing). The files of a later transfer
// open them (protocol.md §4.1). It returns what ends the mark.
func (s *Session) forText() func() {
	was := s.textReply
	s.textReply = true
	return func() { s.textReply = was }
}

// generic is Generic once the I exchange is done.
func (s *Session) generic(ctx context.Context, cmd byte, args ...string) (string, error) {
	out := cappedBuffer{max: maxTextReply}
	if err := s.genericTo(ctx, &out, cmd, args...); err != nil {
		return "", err
	}
	return out.String(), nil
}

// genericTo is generic writing the reply to w as it comes.
func (s *Session) genericTo(ctx context.Context, w io.Writer, cmd byte, args ...string) error {
	sl, err := s.request(ctx, 'G', encodeGenericArgs(cmd, args))
	if err != nil {
		return s.abort(err)
	}
	if sl.ackType == 'Y' {
		text, err := s.decodeString(sl.ackData)
		if err == nil {
			_, err = io.WriteString(w, text)
		}
		return err
	}
	if err := s.takeServerInit(ctx, sl); err != nil {
		return s.abort(err)
	}
	if err := s.recvGroup(ctx, nil, w, true); err != nil {
		return s.abort(err)
	}
	return nil
}

// maxTextReply bounds the text a server's reply may hold in memory (a
// listing of a million files), so that no server can make a client take
// all it has. Held in chunks (cappedBuffer), the client's memory peaks
// at about 2.7 times it (the garbage collector's headroom; 172 MB),
// where 512 MiB in one doubling buffer took 2.3 GB (QA aq). A kerf
// server's listings are not held (ListExactEach). A variable for tests.
var maxTextReply = 64 << 20

// cappedBuffer holds text written to it, refusing more than max bytes.
// It keeps it in chunks, not one buffer doubled as it grows: the old and
// new buffers, and the garbage collector's headroom over them, took
// about five times what was held (QA aq).
type cappedBuffer struct {
	chunks [][]byte
	n, max int
}

// replyChunk is the size of a cappedBuffer's chunks.
const replyChunk = 1 << 20

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.n+len(p) > b.max {
		return 0, fmt.Errorf("kermit: the server's reply is longer than %d MiB, more than a client keeps", b.max>>20)
	}
	for rest := p; len(rest) > 0; {
		if len(b.chunks) == 0 || len(b.chunks[len(b.chunks)-1]) == cap(b.chunks[len(b.chunks)-1]) {
			b.chunks = append(b.chunks, make([]byte, 0, min(replyChunk, max(512, b.n, len(rest)))))
		}
		last := &b.chunks[len(b.chunks)-1]
		k := min(len(rest), cap(*last)-len(*last))
		*last = append(*last, rest[:k]...)
		rest = rest[k:]
	}
	b.n += len(p)
	return len(p), nil
}

// String returns the text held, letting the chunks go as it copies them.
func (b *cappedBuffer) String() string {
	var sb strings.Builder
	sb.Grow(b.n)
	for i, c := range b.chunks {
		sb.Write(c)
		b.chunks[i] = nil
	}
	b.chunks, b.n = nil, 0
	return sb.String()
}

// initServer does the optional I exchange so the command that follows
// uses the agreed block check and packet length. A server that does not
// know I answers with E; then the defaults stay.
func (s *Session) initServer(ctx context.Context) error {
	s.resetNegotiation()
	s.initRefusal = nil
	err := s.sendInit(ctx, 'I')
	var pe *PeerError
	if errors.As(err, &pe) {
		s.resetNegotiation()
		s.initRefusal = pe
		return nil
	}
	if err != nil {
		return err
	}
	// The command restarts at the I's sequence number.
	win := s.neg.window
	s.sw.reset(win)
	return nil
}

// Hello exchanges parameters with a server (an I packet), so that
// PeerIsKerf says what it is before a command depends on it. A server
// that refuses I is taken as a classic Kermit's defaults.
func (s *Session) Hello(ctx context.Context) error {
	if err := s.initServer(ctx); err != nil {
		return s.abort(err)
	}
	return nil
}

// request sends R or G and waits for its answer: an ACK, or an S that
// opens the transaction carrying the reply.
func (s *Session) request(ctx context.Context, typ byte, arg []byte) (*slot, error) {
	data, err := s.encodeField(arg)
	if err != nil {
		return nil, err
	}
	sl, err := s.queueReply(ctx, typ, data, "YS")
	if err != nil {
		return nil, err
	}
	if err := s.await(ctx, sl); err != nil {
		var le *LinkError
		if s.initRefusal != nil && errors.As(err, &le) {
			// Not a server that does not know I: one that refused us
			// (a kerf server that requires TLS) and hung up. Its words
			// say why; the closed link does not. Still a LinkError, not
			// a PeerError: the session is over, not just this command.
			return nil, fmt.Errorf("kermit: the server refused the session (%q) and closed the connection: %w", s.initRefusal.Msg, err)
		}
		return nil, err
	}
	return sl, nil
}

func (s *Session) queueReply(ctx context.Context, typ byte, data []byte, replies string) (*slot, error) {
	sl, err := s.queue(ctx, typ, data, 0)
	if err != nil {
		return nil, err
	}
	sl.replies = replies
	return sl, nil
}

// takeServerInit answers the server's S that arrived in place of an ACK.
func (s *Session) takeServerInit(ctx context.Context, sl *slot) error {
	s.rw.reset(1, 0)
	s.rw.started = true
	p := sl.reply
	if err := s.answerInit(ctx, p, false); err != nil {
		return err
	}
	s.rw.lo = (p.Seq + 1) % 64
	return nil
}

// Finish tells a server to exit server mode (FINISH); Bye also logs out.
func (s *Session) Finish(ctx context.Context) error {
	_, err := s.Generic(ctx, 'F')
	return err
}

// ErrNoTreeListing is ListTree's error for a server that does not list
// trees (not a kerf server, or one from before capas3ListsTree).
var ErrNoTreeListing = errors.New("kermit: the server does not list trees")

// ListTree asks a kerf server for the listing of what spec names and of
// everything under it, each entry named by its path from the server's
// current directory (protocol.md §8, REMOTE DIRECTORY with kerf-tree).
func (s *Session) ListTree(ctx context.Context, spec string) ([]framing.ListingEntry, error) {
	return s.listing(ctx, spec, treeArg)
}

// ListExactEach is REMOTE DIRECTORY spec from a kerf server, its times
// to the nanosecond where the server has them (exactArg), as ListTree's
// are, handing each entry to entry as its line comes, none held: a
// listing of millions of entries costs the client only what entry keeps
// (QA w: ls of 500,000 entries held the listing whole, 281-325 MB, and
// printed it at the end). Another server's reply, not in kerf's form,
// comes back whole as text, in whatever form that server writes; a line
// of a kerf server's that is not in its form (a newer server's, say) goes
// to other as it came. An error of entry or other ends the listing with
// it.
func (s *Session) ListExactEach(ctx context.Context, spec string, entry func(framing.ListingEntry) error, other func(line string) error) (text string, err error) {
	var lines *listingLines
	whole := cappedBuffer{max: maxTextReply}
	err = s.listingTo(ctx, false, func(kerf bool) io.Writer {
		if !kerf {
			return &whole
		}
		lines = &listingLines{ctx: ctx, line: func(line string) error {
			e, err := framing.ParseListingLine(line)
			if err != nil {
				return other(line)
			}
			return entry(e)
		}}
		return lines
	}, spec, exactArg)
	if err == nil && lines != nil {
		err = lines.Close()
	}
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return whole.String(), err
}

// ListTreeEach is ListTree handing each entry to entry as it comes, and
// to problem the name of each directory whose contents the server could
// not list (one it may not read), which ListTree leaves out: what a
// listing shown to a user must say (a kerf server from before the
// request gives none). None is held (QA w: ls -R of 1M
// entries took the client 736 MB, nothing printed until the end).
func (s *Session) ListTreeEach(ctx context.Context, spec string, entry func(framing.ListingEntry) error, problem func(framing.ListingProblem) error) error {
	return s.listTreeEach(ctx, spec, true, entry, problem)
}

// listTreeEach is ListTreeEach, asking for the problem lines only with
// problems (a sender's quick check wants none).
func (s *Session) listTreeEach(ctx context.Context, spec string, problems bool, entry func(framing.ListingEntry) error, problem func(framing.ListingProblem) error) error {
	args := []string{treeArg}
	if problems {
		args = append(args, problemsArg)
	}
	inodes := false
	lines := &listingLines{ctx: ctx, line: func(line string) error {
		if strings.HasPrefix(line, "!") {
			p, err := framing.ParseListingProblem(line)
			if err != nil || problem == nil {
				return err
			}
			return problem(p)
		}
		parse := framing.ParseListingLine
		if inodes {
			parse = framing.ParseListingLineIno
		}
		e, err := parse(line)
		if err != nil {
			return err
		}
		return entry(e)
	}}
	err := s.listingTo(ctx, true, func(bool) io.Writer {
		inodes = s.neg.inodes
		return lines
	}, spec, args...)
	if err == nil {
		err = lines.Close()
	}
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return err
}

// listingLines is a writer that hands line each whole line written to
// it, without its line end (LF, or CRLF as a text transaction may bring
// it), as it comes.
type listingLines struct {
	// ctx, if set, ends the listing once done: the lines of a listing
	// printed to a slow terminal keep coming while the user's Ctrl-C
	// waits for a pause that never comes (QA x: printed to the end,
	// exit 0).
	ctx  context.Context
	line func(string) error
	part []byte
}

// maxListingLine bounds a line held while its end has not come: a
// listing line is a name (at most a path's 4,096 bytes, quoted at worst
// four times over) and a few fields.
const maxListingLine = 64 << 10

func (l *listingLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if end := i; end < 0 && len(l.part)+len(p) > maxListingLine || end >= 0 && len(l.part)+end > maxListingLine {
			return 0, fmt.Errorf("kermit: a listing line longer than %d KiB", maxListingLine>>10)
		}
		if i < 0 {
			l.part = append(l.part, p...)
			break
		}
		line := p[:i]
		if len(l.part) > 0 {
			l.part = append(l.part, line...)
			line = l.part
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if l.ctx != nil && l.ctx.Err() != nil {
			return 0, context.Cause(l.ctx)
		}
		if err := l.line(string(line)); err != nil {
			return 0, err
		}
		l.part = l.part[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Close hands on a last line without its line end.
func (l *listingLines) Close() error {
	if len(l.part) == 0 {
		return nil
	}
	line := string(bytes.TrimSuffix(l.part, []byte("\r")))
	l.part = nil
	return l.line(line)
}

// listing asks a kerf server for REMOTE DIRECTORY spec with kerf's
// second argument arg (treeArg, getArg, getRecursiveArg) and reads the
// listing lines of its reply.
func (s *Session) listing(ctx context.Context, spec, arg string) ([]framing.ListingEntry, error) {
	text, err := s.listingText(ctx, true, spec, arg)
	if err != nil {
		return nil, err
	}
	if s.neg.inodes && arg == treeArg {
		return framing.ParseListingIno(text)
	}
	return framing.ParseListing(text)
}

// listingText is the text of REMOTE DIRECTORY spec with kerf's further
// arguments args, asked of a server that lists trees (capas3ListsTree);
// of another, ErrNoTreeListing if kerfOnly, else the plain listing
// without them.
func (s *Session) listingText(ctx context.Context, kerfOnly bool, spec string, args ...string) (string, error) {
	out := cappedBuffer{max: maxTextReply}
	if err := s.listingTo(ctx, kerfOnly, func(bool) io.Writer { return &out }, spec, args...); err != nil {
		return "", err
	}
	return out.String(), nil
}

// listingTo is listingText writing the reply as it comes to the writer
// to returns, asked once the peer is known: kerf, a server that lists
// trees (whose reply is in kerf's listing form).
func (s *Session) listingTo(ctx context.Context, kerfOnly bool, to func(kerf bool) io.Writer, spec string, args ...string) error {
	defer s.flush()
	defer s.forText()()
	if err := s.initServer(ctx); err != nil {
		return s.abort(err)
	}
	kerf := s.neg.peer.Capas3&capas3ListsTree != 0
	if !kerf {
		if kerfOnly {
			return ErrNoTreeListing
		}
		args = nil
	}
	return s.genericTo(ctx, to(kerf), 'D', append([]string{spec}, args...)...)
}

// SkipWhole is a resuming sender's quick check for a whole tree at
// once, as rsync makes it: it lists, in one request per few hundred top
// names, what the kerf server already has under the names of files,
// reports each file the server has whole (same size, modification time
// framing.SameModTime, and permissions where known) as FileSkipped with
// ErrAlreadyThere, and returns the others, to be sent; partial, if set,
// names a file's partial as the listing would show it, and a file with
// one left there is sent, after the others (the receiver resumes from
// the partial, or its own check removes it). The engine's
// own check, made file by file as the server receives, would cost each
// such file a round trip or, for a small one, its data (protocol.md §6,
// items 5 and 6). Without a listing (a server that does not list
// trees, or refuses) files comes back whole; only a lost link is an
// error.
func (s *Session) SkipWhole(ctx context.Context, files []OutgoingFile, partial func(name string) string) ([]OutgoingFile, error) {
	var tops []string
	seen := map[string]bool{}
	// Each file by its name, and by its partial's as a hash (a file
	// taken for one with a partial left is only sent, which is what
	// the check would do without a listing): the listing's entries are
	// looked up as they come and none is kept (QA w: send --resume of
	// 1M files held the listing's text, its entries and a map of them,
	// beside the files: 1.09 GB).
	idx := make(map[string]int, len(files))
	var parts map[uint64]int
	seed := maphash.MakeSeed()
	if partial != nil {
		parts = make(map[uint64]int)
	}
	for i, f := range files {
		top, _, _ := strings.Cut(f.Name, "/")
		if top != "" && !seen[top] {
			seen[top] = true
			tops = append(tops, top)
		}
		idx[f.Name] = i
		if partial != nil && !f.Dir {
			parts[maphash.String(seed, partial(f.Name))] = i
		}
	}
	seen = nil
	const (
		whole = 1 << iota
		partialLeft
	)
	state := make([]uint8, len(files))
	var there []uint64 // inode numbers, if the listing has them
	entry := func(e framing.ListingEntry) error {
		if i, ok := parts[maphash.String(seed, e.Name)]; ok {
			// A partial left there: resumed from it, last, since the
			// session cut off while sending it may still hold it until
			// the server takes it over (a minute's silence; protocol.md
			// §6), and the other files need not wait for that.
			state[i] |= partialLeft
		}
		i, ok := idx[e.Name]
		if !ok {
			return nil
		}
		f := &files[i]
		perm := f.Mode
		if f.Mode == 0 && !f.ModeKnown {
			perm = e.Mode // not known here: not compared
		}
		if f.Dir || f.Open == nil || f.Size < 0 || f.ModTime.IsZero() || !e.MatchesWithin(f.Size, f.ModTime, perm, s.cfg.ModifyWindow) {
			return nil
		}
		state[i] |= whole
		if e.Ino != 0 {
			if there == nil {
				there = make([]uint64, len(files))
			}
			there[i] = e.Ino
		}
		return nil
	}
	for len(tops) > 0 {
		// A spec of at most about a kilobyte, which any packet length a
		// kerf peer agrees to carries.
		var batch []string
		size := 0
		// A name that cannot be quoted among others goes alone.
		for len(tops) > 0 && (len(batch) == 0 || size+len(tops[0]) < 1000 && joins(append(batch, tops[0]))) {
			batch = append(batch, tops[0])
			size += len(tops[0]) + 3
			tops = tops[1:]
		}
		spec, _ := framing.JoinSpec(batch)
		// (Entries a listing gave before it failed stand: each says
		// what the server has.)
		err := s.listTreeEach(ctx, spec, false, entry, nil)
		if isLinkError(err) || ctx.Err() != nil {
			return files, err
		}
		if errors.Is(err, ErrNoTreeListing) {
			return files, nil // no listing: the engine checks each file
		}
		// Another error: this batch's files are checked by the engine.
	}
	var send, later []OutgoingFile
	for i, f := range files {
		switch {
		case state[i]&partialLeft != 0 && !f.Dir:
			later = append(later, f)
		case state[i]&whole != 0:
			ev := Event{Kind: FileSkipped, Name: f.Name, Err: ErrAlreadyThere, Sending: true, Size: f.Size, Path: f.Path, ModTime: f.ModTime}
			if there != nil {
				ev.ThereIno = there[i]
			}
			s.event(ev)
		default:
			send = append(send, f)
		}
	}
	return append(send, later...), nil
}

// joins reports whether names go as one filespec (framing.JoinSpec).
func joins(names []string) bool {
	_, ok := framing.JoinSpec(names)
	return ok
}

// GetListing asks a kerf server for the regular files a GET of spec
// (GET /RECURSIVE with recursive) would send, each under the name its F
// packet would give it (protocol.md §8, REMOTE DIRECTORY with kerf-get):
// what a resuming client compares with its files for GetOptions.Skip.
func (s *Session) GetListing(ctx context.Context, spec string, recursive bool) ([]framing.ListingEntry, error) {
	var list []framing.ListingEntry
	err := s.GetListingEach(ctx, spec, recursive, func(e framing.ListingEntry) error {
		list = append(list, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// GetListingEach is GetListing handing each entry to entry as its line
// comes, none held: a resuming get of a tree of millions of files holds
// only what entry keeps (the files it has whole), not the listing. An
// error of entry ends the listing with it.
func (s *Session) GetListingEach(ctx context.Context, spec string, recursive bool, entry func(framing.ListingEntry) error) error {
	arg := getArg
	if recursive {
		arg = getRecursiveArg
	}
	lines := &listingLines{ctx: ctx, line: func(line string) error {
		e, err := framing.ParseListingLine(line)
		if err != nil {
			return err
		}
		return entry(e)
	}}
	err := s.listingTo(ctx, true, func(bool) io.Writer { return lines }, spec, arg)
	if err == nil {
		err = lines.Close()
	}
	return err
}

// sendSkip tells a kerf server which files of the next GET this client
// has whole: a text transaction (S, X kerf-skip, D..., Z, B) of their
// listing lines, which the window carries in a few round trips however
// many they are. told is false if the server would not take it (it
// refused the S: a user who may not send), which is not an error: the
// GET then sends every file.
func (s *Session) sendSkip(ctx context.Context, skip []framing.ListingEntry) (told bool, err error) {
	s.resetNegotiation()
	if err := s.sendInit(ctx, 'S'); err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && ctx.Err() == nil {
			return false, nil
		}
		return false, err
	}
	if s.neg.peer.Capas3&capas3ListsTree == 0 || !s.neg.peerKerf {
		// Not a server that reads it: end the empty group.
		sl, err := s.queue(ctx, 'B', nil, 0)
		if err == nil {
			err = s.await(ctx, sl)
		}
		return false, err
	}
	var text []byte
	for _, e := range skip {
		text = framing.AppendListingLineExact(text, e)
	}
	if err := s.sendText(ctx, skipTitle, bytes.NewReader(text)); err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && ctx.Err() == nil {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// errListedWhole is ErrAlreadyThere of a file the server left out of a
// GET for its kerf-skip list, told by the client when the GET is over,
// not in the server's stream (shareTracker counts the stream's files).
var errListedWhole = fmt.Errorf("%w", ErrAlreadyThere)

// reportSkipped watches the events of the GET that follows a kerf-skip
// and returns the function that, once it is over, reports as
// FileSkipped each file of skip the GET did not bring: the server left
// it out. A file it sent after all (changed since its listing) has its
// own events.
func (s *Session) reportSkipped(skip []framing.ListingEntry) func() {
	var mu sync.Mutex
	seen := map[string]bool{}
	tell := s.cfg.Events
	s.cfg.Events = func(e Event) {
		if e.Kind == FileStart || e.Kind == FileDone || e.Kind == FileFailed || e.Kind == FileSkipped {
			mu.Lock()
			seen[e.Name] = true
			mu.Unlock()
		}
		if tell != nil {
			tell(e)
		}
	}
	return func() {
		s.cfg.Events = tell
		mu.Lock()
		defer mu.Unlock()
		for _, e := range skip {
			if !seen[e.Name] {
				s.event(Event{Kind: FileSkipped, Name: e.Name, Err: errListedWhole, Size: e.Size})
			}
		}
	}
}
