package kermit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"io"
	"io/fs"
	"iter"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"kerf/framing"
)

// Serve runs Kermit server mode: it waits for commands (I, S, R, G) and
// carries them out against fsys until the client says FINISH or BYE, the
// context ends, or the link fails. Errors of single commands go back to
// the client as E packets and the server keeps waiting.
func (s *Session) Serve(ctx context.Context, fsys ServerFS) error {
	defer s.flush()
	defer s.dropSkip()
	s.serving = true
	defer func() { s.serving = false }()
	unread := 0 // failures in a row before any packet was read
	for {
		s.flush()
		s.resetNegotiation()
		err := s.serveOne(ctx, fsys)
		if err == nil || s.command != "" {
			unread = 0
		}
		if err != nil {
			if errors.Is(err, errServerExit) {
				return nil
			}
			if errors.Is(err, errDrained) {
				s.cfg.Log.Info("session ended between commands: the server is stopping")
				s.errorPacket(ShuttingDown)
				return nil
			}
			if ctx.Err() != nil {
				// Ended by this side (a server shutting down, an idle
				// session): the client is told why, as far as it listens.
				s.errorPacket(cancelMessage(ctx))
				return err
			}
			if errors.Is(err, ErrPeerNotForce3) {
				// Said so that a client not forcing type 3 reads it
				// (review 56b: the server's E went with type 3).
				s.cfg.Log.Info("server command failed", "err", err)
				s.plainErrorPacket(blockCheck5Short)
				continue
			}
			if errors.Is(err, ErrTooManyRetries) && !s.cfg.Reliable {
				// The client went silent mid-command, its line still
				// there (one that closed it is a reading LinkError): it
				// is told, should it listen again, and the server waits
				// for the next command, as C-Kermit's does (QA: a stdio
				// server exited with no E). Over TCP the session ends, as
				// before: its client is gone.
				s.cfg.Log.Info("server command abandoned; waiting for the next", "err", err)
				s.errorPacket(peerText(err))
				continue
			}
			if isLinkError(err) {
				var le *LinkError
				if s.cfg.KeepServing && !(errors.As(err, &le) && le.Op == "reading") {
					// The client vanished; the line is still there.
					s.cfg.Log.Info("server command abandoned; waiting for the next", "err", err)
					continue
				}
				return err
			}
			if de := (*DataPathError)(nil); errors.As(err, &de) {
				// No file can go over the data path any more: the client
				// is told why, and the session ends.
				if df, ok := s.data.(DataFailure); ok && df.LocalFailure() != nil {
					// Found here (a protocol error, damage past
					// recovery), not a connection lost: the operator's
					// to know too (the review: a client's oversize
					// blocks refused, said at info only).
					s.cfg.Log.Warn("data path failed", "err", err)
				} else {
					s.cfg.Log.Info("data path failed", "err", err)
				}
				s.errorPacket(err.Error())
				return err
			}
			if errors.Is(err, fs.ErrNotExist) && s.command == "GC" {
				// The client's to know (its E says it): a REMOTE CD
				// that finds no such directory is how a send to a new
				// name begins (QA: every such upload logged a failure).
				s.cfg.Log.Debug("server command failed", "command", commandName(s.command), "err", err)
			} else {
				// A GET of a name not there included (QA: an operator
				// saw only a session that ended well).
				s.cfg.Log.Info("server command failed", "command", commandName(s.command), "err", err)
			}
			if unread++; unread >= maxUnreadFailures && !s.cfg.KeepServing {
				// Failing before it reads anything, it would fail so for
				// ever, as fast as it can (QA: a data path's failure kept
				// by its batch failed every flush; 80,000 log lines a
				// second): the session ends. (A server of a line waits
				// for the next packet there, whatever garbage came.)
				s.errorPacket(peerText(err))
				return err
			}
			var pe *PeerError
			var ge *GroupError
			var ee *endedError
			switch {
			case errors.As(err, &pe), errors.Is(err, ErrPeerRestarted):
				// (A restarted client's packet is read next, as its
				// new command.)
			case errors.As(err, &ge), errors.As(err, &ee):
				// A GET whose group ended with B: the transaction is
				// over, and its files' failures were told per file (a
				// refusal is the client's own; an unreadable file is
				// announced to a kerf client). An E now would be read as
				// the answer to the client's next command.
			default:
				s.errorPacket(peerText(err))
			}
		}
	}
}

// maxUnreadFailures is how many server commands in a row may fail
// before reading a packet: one such failure is a stale state told once
// (an E); more are a session that can no longer read a command.
const maxUnreadFailures = 3

// goOps are the words Go's file errors put before a path ("removeat
// x: no such file or directory"), and the prefix of kerf's file store:
// implementation detail in a message a remote user reads.
var goOps = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|: )(?:filestore: )?(?:openat2?|statat|fstatat|lstat|stat|open|removeat|unlinkat|remove|mkdirat|mkdir|renameat2?|rename|fchmodat|chmod|readdirent|readdir|readlinkat) `)
})

// peerText is err as a server command's E packet says it: the cause and
// the name, without the names of system calls ("nonexist.txt: no such
// file or directory", where the log has "removeat nonexist.txt: ...").
func peerText(err error) string {
	msg := goOps().ReplaceAllString(err.Error(), "$1")
	// os.Root's refusal, in the words a network server gives it (QA r:
	// a serial server said "path escapes from parent").
	msg = strings.ReplaceAll(msg, "path escapes from parent", "refused: the path leads outside the directory (through a symbolic link or ..)")
	return strings.ReplaceAll(msg, "filestore: ", "")
}

var errServerExit = errors.New("kermit: server finished")

// ShuttingDown is the E packet text of a server session ended because
// its server is stopping (Config.Drain, or cut short).
const ShuttingDown = "kerf: the server is shutting down"

// drainIdle is how long a draining server session waits for its
// client's next command before it ends (Config.Drain).
var drainIdle = 10 * time.Second

var errDrained = errors.New("kermit: ended between commands, the server stopping")

// commandWait is ctx for the wait for a client's next command: with
// Config.Drain closed, it ends once the wait has lasted drainIdle.
func (s *Session) commandWait(ctx context.Context) (context.Context, context.CancelFunc) {
	drain := s.cfg.Drain
	if drain == nil {
		return ctx, func() {}
	}
	idle := drainIdle
	wctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-drain:
		case <-wctx.Done():
			return
		}
		t := time.NewTimer(idle)
		defer t.Stop()
		select {
		case <-t.C:
			cancel(errDrained)
		case <-wctx.Done():
		}
	}()
	return wctx, func() { cancel(nil) }
}

// cancelMessage is the E packet text for a session whose ctx ended: its
// cause, when the canceller gave one.
func cancelMessage(ctx context.Context) string {
	c := context.Cause(ctx)
	if c == nil || errors.Is(c, context.Canceled) || errors.Is(c, context.DeadlineExceeded) {
		return "Transfer canceled"
	}
	return c.Error()
}

// Authorizer is an optional extension of a ServerFS that requires a
// login. Login handles REMOTE LOGIN (generic command I: user, password);
// Authorized is asked before every other command but the I exchange,
// FINISH, BYE and LOGOUT, and its error goes back to the client as an E
// packet. cmd is the packet type ("S", "R", "V", "J") or "G" and the
// generic command letter ("GD", "GE", ...).
type Authorizer interface {
	Login(user, password string) error
	Authorized(cmd string) error
}

// authorize asks fsys, if it is an Authorizer, whether cmd may run.
func authorize(fsys ServerFS, cmd string) error {
	if a, ok := fsys.(Authorizer); ok {
		return a.Authorized(cmd)
	}
	return nil
}

func isLinkError(err error) bool {
	var le *LinkError
	return errors.As(err, &le) || errors.Is(err, ErrTooManyRetries)
}

// serveOne handles one transaction (an optional I exchange, then one
// command).
func (s *Session) serveOne(ctx context.Context, fsys ServerFS) error {
	for {
		s.command = "" // none yet: a failure to read names none
		wctx, done := s.commandWait(ctx)
		s.inCommandWait = true
		p, err := s.nextPacket(wctx, s.cfg.IdleTimeout)
		s.inCommandWait = false
		done()
		if err != nil {
			if ctx.Err() == nil && errors.Is(context.Cause(wctx), errDrained) {
				return errDrained
			}
			var pe *PeerError
			if errors.As(err, &pe) {
				return nil // the client gave up on something; keep serving
			}
			if le := (*LinkError)(nil); errors.As(err, &le) && le.Closed() && !s.rw.started {
				return errServerExit // between commands: how a client leaves
			}
			return err
		}
		s.command = string(p.Type)
		if p.Type != 'N' {
			s.lastAnswer = s.lastAnswer[:0] // a new command: the last one's answer is past
		}
		switch p.Type {
		case 'I':
			if err := s.answerInit(ctx, p, true); err != nil {
				return err
			}
			// The next command restarts the sequence; keep the agreement.
			s.rw.started = false
			s.rw.size = 1
		case 'S':
			s.literalNext = false // for a REMOTE DELETE or DIRECTORY only
			if a, ok := fsys.(Accountless); ok && s.skip == nil && s.skipPending == nil {
				// (Fixed while the session holds sets: they count in
				// the bounds it says.)
				s.skipAccountless = a.Accountless()
			}
			var store Store = fsys
			if err := authorize(fsys, "S"); err != nil {
				// A kerf client may still send a read-only server its
				// kerf-skip text before a GET: the S goes on, and each
				// file it would send is refused with the reason.
				if !errors.Is(err, ErrReadOnly) || !fromKerf(p) {
					return err
				}
				store = refusingStore{err}
			}
			s.rw.started = true
			s.rw.lo = (p.Seq + 1) % 64
			if err := s.answerInit(ctx, p, true); err != nil {
				return err
			}
			s.rw.lo = (p.Seq + 1) % 64
			return s.recvGroup(ctx, store, nil, true)
		case 'R', 'V', 'J': // V: GET /RECURSIVE, J: REGET (C-Kermit)
			sh, ex, rm := s.share, s.exclude, s.removeSent
			s.share, s.exclude, s.removeSent = share{}, nil, false // for this GET only, whatever comes of it
			s.literalNext = false                                  // for a REMOTE DELETE or DIRECTORY only
			defer s.dropSkip()
			if err := authorize(fsys, string(p.Type)); err != nil {
				return err
			}
			spec, err := s.decodeString(p.Data)
			if err != nil {
				return err
			}
			src, stop, err := s.getSource(fsys, spec, p.Type != 'R', sh, ex)
			if err != nil {
				return err
			}
			defer stop()
			if rm {
				// Asked for, so fsys is a SentRemover (REMOTE SET).
				s.keptMu.Lock()
				s.keptSources, s.keptMore = nil, 0
				s.keptMu.Unlock()
				r := &sentRemoval{fs: fsys.(SentRemover), taken: map[string]OutgoingFile{}, log: s.cfg.Log, local: s.cfg.PeerLocal, kept: s.noteKeptSource}
				src = r.source(src)
				tell := s.cfg.Events
				s.cfg.Events = r.event(tell)
				defer func() { s.cfg.Events = tell }()
			}
			if p.Type == 'J' {
				saved := s.cfg.Resume
				s.cfg.Resume = true
				defer func() { s.cfg.Resume = saved }()
			}
			return s.serveSend(ctx, p.Seq, src)
		case 'G':
			return s.serveGeneric(ctx, p, fsys)
		case 'N', 'Y':
			if p.Type == 'N' && !s.cfg.Reliable && len(s.lastAnswer) > 0 && p.Seq == s.lastAnswerSeq {
				// The client NAKs the answer to its command: it came
				// damaged, or not at all. Said again; the client
				// would NAK for ever (C-Kermit), and this side wait.
				s.cfg.Log.Debug("answer NAKed; sent again", "seq", p.Seq)
				s.rw.started = false // what comes next is a new command
				if err := s.c.writeRaw(s.lastAnswer); err != nil {
					return err
				}
				if err := s.c.flush(); err != nil {
					return err
				}
				continue
			}
			if p.Type == 'N' && !s.cfg.Reliable && p.Seq == 0 && len(s.lastAnswer) == 0 {
				// A client waiting on the answer to a command this side
				// never read whole (damaged or lost on the line): told
				// so in an E, which ends that command, not the session.
				// A NAK back would not do: C-Kermit takes a NAK like its
				// own for its echo, and sends the command again only if
				// asked in a way it hears (QA an: after an I exchange,
				// its REMOTE DIRECTORY was lost, and both sides waited
				// for ever).
				s.cfg.Log.Info("a NAK for the answer to a command that did not arrive whole; told to give it again")
				s.rw.started = false // what comes next is a command
				s.errorPacketAt(0, "your command did not arrive whole: give it again")
				continue
			}
			// a stray reply in command wait; ignore it
			s.rw.started = false
		case 'F', 'A', 'D', 'Z', 'B':
			if !s.cfg.Reliable {
				// On a serial line it may be a packet sent again whose
				// answer, an E, was lost: say it again (a sender told
				// nothing would retry to its limit), numbered as the
				// packet is, which is what its sender waits on an
				// answer to (QA: numbered 0).
				s.cfg.Log.Info("server command failed", "err", fmt.Sprintf("a %c packet while waiting for a command", p.Type))
				s.errorPacketAt(p.Seq, fmt.Sprintf("unimplemented server command %q", p.Type))
				s.rw.started = false
				continue
			}
			// On TCP nothing is sent twice: the rest of a transfer that
			// ended (its client gone, its group failed after an E)
			// still on its way, with no one to answer.
			s.cfg.Log.Debug("stray transfer packet in command wait", "type", string(p.Type), "seq", p.Seq)
			s.rw.started = false
		case 'C':
			// C-Kermit's REMOTE HOST: a shell command for the server to
			// run. Never: a file server's users get files, not a shell.
			return errors.New("REMOTE HOST refused: a kerf server runs no commands for its clients")
		default:
			return fmt.Errorf("unimplemented server command %q", p.Type)
		}
	}
}

// maxNamedDeleted is how many of a pattern's removed files a REMOTE
// DELETE's answer names; the rest are counted.
const maxNamedDeleted = 20

// deletedReply is a REMOTE DELETE's answer: the files removed, by
// name (a pattern's, not the pattern: QA ae), the first of them
// (names) and how many in all (n); a name that would not be read back
// as itself (a control character, a backslash, not UTF-8) quoted.
func deletedReply(spec string, names []string, n int) string {
	show := func(s string) string {
		if strings.IndexFunc(s, framing.IsControl) >= 0 || strings.Contains(s, `\`) || !utf8.ValidString(s) {
			return strconv.Quote(s)
		}
		return s
	}
	switch {
	case n == 0:
		return "deleted " + show(spec)
	case n == 1 && len(names) == 1:
		return "deleted " + show(names[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "deleted %d files: ", n)
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(show(name))
	}
	if n > len(names) {
		fmt.Fprintf(&b, " and %d more", n-len(names))
	}
	return b.String()
}

// commandNames say a server command as the client's user would have
// typed it, for the log; the packet letter(s) for any other.
var commandNames = map[string]string{
	"S": "SEND", "R": "GET", "V": "GET /RECURSIVE", "J": "REGET",
	"GC": "REMOTE CD", "GA": "REMOTE PWD", "GD": "REMOTE DIRECTORY",
	"GE": "REMOTE DELETE", "Gm": "REMOTE MKDIR", "Gd": "REMOTE RMDIR",
	"GR": "REMOTE RENAME", "GS": "REMOTE SET", "GT": "REMOTE TYPE",
	"GU": "REMOTE SPACE", "GH": "REMOTE HELP", "GI": "REMOTE LOGIN",
}

func commandName(letters string) string {
	if n, ok := commandNames[letters]; ok {
		return n
	}
	return letters
}

// serveSend becomes the sender for a GET: S with the request's sequence
// number, then the file group.
func (s *Session) serveSend(ctx context.Context, seq int, src fileSource) error {
	s.sw.reset(1)
	s.sw.next, s.sw.lo = seq, seq
	s.c.setCheck(1)
	if err := s.sendInit(ctx, 'S'); err != nil {
		return err
	}
	// What a failed GET never began is not walked to be reported: its
	// client hears nothing of it, and the walk of the rest of a deep
	// tree for a client gone held the session, and the server's
	// shutdown, for minutes (QA).
	src.rest = nil
	return s.sendGroup(ctx, src)
}

// matchEach is fsys's MatchEach, or, for a ServerFS that is no
// MatchStreamer, its Match handed out one at a time (and its list left
// as it was: a ServerFS may keep it).
func matchEach(fsys ServerFS, spec string, recursive bool, keep func(string) bool, yield func(OutgoingFile) bool) (left int, err error) {
	if ms, ok := fsys.(MatchStreamer); ok {
		return ms.MatchEach(spec, recursive, keep, yield)
	}
	files, err := fsys.Match(spec, recursive)
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		if !f.Dir && keep != nil && !keep(f.Name) {
			left++
			continue
		}
		if !yield(f) {
			break
		}
	}
	return left, nil
}

// getSource is what a GET of spec sends: the files of this session's
// share sh, less those ex excludes and those the client said it has
// (kerf-skip), one at a time as the walk finds them (matchEach), so
// that a GET holds no listing of its tree; stop ends the walk. An error
// says the GET sends nothing: the spec names nothing, or nothing that
// can be sent (share 0 says so; the other shares send an empty group).
func (s *Session) getSource(fsys ServerFS, spec string, recursive bool, sh share, ex Exclusions) (fileSource, func(), error) {
	skip := s.skip
	wanted := func(f OutgoingFile) bool {
		if sh.n > 1 && !f.Dir && !sh.has(f.Name) {
			return false
		}
		return !ex.Excludes(f.Name, f.Dir) && (f.Dir || skip.len() == 0 || !skip.has(f.Name, f.Size, f.ModTime, f.Mode))
	}
	none := func(err error) (fileSource, func(), error) {
		if sh.k > 0 {
			// Share 0 tells the client; the others send nothing.
			s.cfg.Log.Debug("GET share with nothing to send", "share", sh, "err", err)
			return sliceSource(nil), func() {}, nil
		}
		return fileSource{}, nil, err
	}
	var keep func(string) bool
	if sh.n > 1 {
		keep = sh.has
	}
	var left int
	var merr error
	next, stop := iter.Pull(func(yield func(OutgoingFile) bool) {
		left, merr = matchEach(fsys, spec, recursive, keep, yield)
	})
	// The first file, or the walk's end, says whether there is anything
	// to send, before the S.
	first, ok := next()
	if !ok {
		stop()
		if merr == nil && left == 0 {
			merr = fmt.Errorf("no files match %s", spec)
		}
		if merr != nil {
			return none(merr)
		}
	}
	held := ok // first is still to go
	pull := func() (OutgoingFile, bool) {
		for {
			f, ok := first, held
			if held {
				first, held = OutgoingFile{}, false
			} else {
				f, ok = next()
			}
			if !ok || wanted(f) {
				return f, ok
			}
		}
	}
	return fileSource{
		next: pull,
		rest: func(yield func(OutgoingFile) bool) {
			for f, ok := pull(); ok; f, ok = pull() {
				if !yield(f) {
					return
				}
			}
		},
	}, stop, nil
}

// Generic command arguments are tochar(len) value, repeated. An argument
// longer than 94 bytes (a deep path) cannot be said that way; kerf then
// writes tochar(0) and a two-character length, tochar(n/95) tochar(n%95),
// as long packets do. Classic Kermits never send an empty argument
// followed by more, so the form is unambiguous between kerf peers.

// parseGenericArgs reads the length-prefixed arguments of a REMOTE
// command, without their grouping braces (ungroupArg).
func parseGenericArgs(b []byte) []string {
	var args []string
	for len(b) > 0 {
		n := int(b[0]) - 32
		hdr := 1
		if n == 0 && len(b) >= 3 {
			n = (int(b[1])-32)*95 + int(b[2]) - 32
			hdr = 3
		}
		if n < 0 || hdr+n > len(b) {
			args = append(args, ungroupArg(string(b[1:])))
			break
		}
		args = append(args, ungroupArg(string(b[hdr:hdr+n])))
		b = b[hdr+n:]
	}
	return args
}

// ungroupArg takes the grouping braces off a REMOTE argument: C-Kermit
// sends them ({my password}, {dir with spaces}), and they are not part
// of the value.
func ungroupArg(a string) string {
	if len(a) >= 2 && a[0] == '{' && a[len(a)-1] == '}' {
		return a[1 : len(a)-1]
	}
	return a
}

// groupArg is what a client sends for the argument a so that the
// server's ungroupArg gives a back: a value that is itself in braces (a
// file named "{x}", a password "{secret}") gets a pair more.
func groupArg(a string) string {
	if ungroupArg(a) != a {
		return "{" + a + "}"
	}
	return a
}

// encodeGenericArgs writes a REMOTE command and its arguments, each
// length-prefixed and protected by groupArg, so parseGenericArgs gives
// them back.
func encodeGenericArgs(cmd byte, args []string) []byte {
	b := []byte{cmd}
	for i, a := range args {
		a = groupArg(a)
		if a == "" && i < len(args)-1 {
			// Bare, an empty argument followed by another would read as
			// a long argument's length.
			a = "{}"
		}
		if len(a) > 94 {
			a = a[:min(len(a), framing.MaxLongLen)]
			b = append(b, ' ', byte(32+len(a)/95), byte(32+len(a)%95))
		} else {
			b = append(b, byte(32+len(a)))
		}
		b = append(b, a...)
	}
	return b
}

func (s *Session) serveGeneric(ctx context.Context, p framing.Packet, fsys ServerFS) error {
	raw, err := s.neg.in.Decode(nil, p.Data)
	if err != nil || len(raw) == 0 {
		return fmt.Errorf("%w: bad generic command", ErrProtocol)
	}
	s.command = "G" + string(raw[0])
	args := parseGenericArgs(raw[1:])
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	a, isAuth := fsys.(Authorizer)
	switch {
	case raw[0] == 'I' && isAuth && len(args) == 0:
		// C-Kermit's LOGOUT: REMOTE LOGIN with nothing. (A kerf
		// client's anonymous login gives two empty arguments.)
		if lo, ok := fsys.(interface{ Logout() }); ok {
			lo.Logout()
		}
		return s.answer(p.Seq, nil)
	case raw[0] == 'I' && isAuth:
		if err := a.Login(arg(0), arg(1)); err != nil {
			return err
		}
		return s.answer(p.Seq, nil)
	case raw[0] != 'F' && raw[0] != 'L' && raw[0] != 'X':
		if err := authorize(fsys, "G"+string(raw[0])); err != nil {
			return err
		}
	}
	// Asked for by the REMOTE SET just before, and for this command only.
	literal := s.literalNext
	s.literalNext = false
	var lit LiteralFS
	if literal {
		l, ok := fsys.(LiteralFS)
		if !ok || (raw[0] != 'E' && raw[0] != 'D') {
			return fmt.Errorf("%s is only for REMOTE DELETE and DIRECTORY on this server", literalParam)
		}
		lit = l
	}
	var reply string
	switch raw[0] {
	case 'F', 'L', 'X': // finish, bye/logout, exit
		if err := s.ackRecv(p.Seq, nil); err != nil {
			return err
		}
		return errServerExit
	case 'C':
		if err := fsys.Chdir(arg(0)); err != nil {
			return err
		}
		reply = fsys.Pwd()
	case 'A':
		reply = fsys.Pwd()
	case 'D':
		if arg(1) == getArg || arg(1) == getRecursiveArg {
			return s.serveGetListing(ctx, p.Seq, fsys, arg(0), arg(1) == getRecursiveArg)
		}
		if arg(1) == treeArg {
			tl, ok := fsys.(TreeLister)
			if !ok {
				return fmt.Errorf("unimplemented: a listing of the tree")
			}
			if lit != nil {
				tl = literalTree{lit}
			}
			form := TreeForm{Ino: s.neg.inodes, Problems: arg(2) == problemsArg}
			return s.serveTree(ctx, p.Seq, func(spec string, w io.Writer) error { return tl.ListTree(spec, form, w) }, arg(0))
		}
		if lw, ok := fsys.(ListWriter); ok {
			form := ListForm{Exact: arg(1) == exactArg, Literal: lit != nil}
			return s.serveTree(ctx, p.Seq, func(spec string, w io.Writer) error { return lw.ListTo(spec, form, w) }, arg(0))
		}
		list := fsys.List
		if lit != nil {
			list = lit.ListLiteral
		}
		if reply, err = list(arg(0)); err != nil {
			return err
		}
	case 'E':
		if rn, ok := fsys.(RemoveNamer); ok {
			names, n, err := rn.RemoveNamed(arg(0), lit != nil, maxNamedDeleted)
			if err != nil {
				return err
			}
			reply = deletedReply(arg(0), names, n)
			break
		}
		remove := fsys.Remove
		if lit != nil {
			remove = lit.RemoveLiteral
		}
		if err := remove(arg(0)); err != nil {
			return err
		}
		reply = "deleted " + arg(0)
	case 'm':
		if err := fsys.Mkdir(arg(0)); err != nil {
			return err
		}
	case 'd':
		if err := fsys.Rmdir(arg(0)); err != nil {
			return err
		}
	case 'R':
		if err := fsys.Rename(arg(0), arg(1)); err != nil {
			return err
		}
	case 'S': // REMOTE SET: kerf's own parameters only
		switch arg(0) {
		case shareParam:
			sh, err := parseShare(arg(1))
			if err != nil {
				return err
			}
			s.share = sh
		case excludeParam:
			if len(s.exclude) >= maxExclusions {
				return fmt.Errorf("more than %d exclude patterns", maxExclusions)
			}
			e, err := parseExclusion(arg(1))
			if err != nil {
				return err
			}
			s.exclude = append(s.exclude, e)
		case removeSourceParam:
			sr, ok := fsys.(SentRemover)
			if !ok {
				return errors.New("this server does not remove the files it sends")
			}
			if err := sr.CanRemoveSent(); err != nil {
				return err
			}
			s.removeSent = true
		case keptReportParam:
			// The files the last GET could not remove, a line each.
			return s.reply(ctx, p.Seq, s.concealed(s.keptReport()), nil)
		case literalParam:
			if _, ok := fsys.(LiteralFS); !ok || arg(1) != "on" {
				return fmt.Errorf("this server cannot take %q", literalParam+" "+arg(1))
			}
			s.literalNext = true
		case congestionParam:
			cs, ok := s.data.(interface{ SetCongestion(string) error })
			if !s.dualActive() || !ok {
				return errors.New("no TCP data connections to set the congestion control of")
			}
			if err := cs.SetCongestion(arg(1)); err != nil {
				return err
			}
			s.cfg.Log.Info("data connections' congestion control set, as the client asked", "congestion", arg(1))
		default:
			return fmt.Errorf("unimplemented REMOTE SET parameter %q", arg(0))
		}
	case 'T': // REMOTE TYPE
		text, err := typeFiles(fsys, arg(0))
		if err != nil {
			return err
		}
		return s.reply(ctx, p.Seq, text, nil)
	case 'U': // REMOTE SPACE
		sp, ok := fsys.(interface{ Space() (int64, error) })
		if !ok {
			return fmt.Errorf("unimplemented generic command 'U'")
		}
		n, err := sp.Space()
		if err != nil {
			return err
		}
		reply = fmt.Sprintf("%d bytes free", n)
	case 'H':
		reply = "kerf server: GET, SEND, REMOTE DIR/CD/PWD/TYPE/SPACE/DELETE/MKDIR/RMDIR/RENAME, FINISH, BYE"
	default:
		return fmt.Errorf("unimplemented generic command %q", raw[0])
	}
	return s.reply(ctx, p.Seq, []byte(reply), nil)
}

// answer acknowledges the command of sequence number seq with data, its
// whole answer, kept to be said again (lastAnswer).
func (s *Session) answer(seq int, data []byte) error {
	if err := s.ackRecv(seq, data); err != nil {
		return err
	}
	s.noteAnswer(seq)
	return nil
}

// reply answers the generic command of sequence number seq with text
// and then what more holds: in the ACK if it fits, else as a text
// transaction (S X D Z B).
func (s *Session) reply(ctx context.Context, seq int, text []byte, more io.Reader) error {
	if more == nil {
		enc, n := s.neg.out.Encode(nil, text, s.neg.maxData)
		if n == len(text) {
			return s.answer(seq, enc)
		}
	}
	s.sw.reset(1)
	s.sw.next, s.sw.lo = seq, seq
	s.c.setCheck(1)
	if err := s.sendInit(ctx, 'S'); err != nil {
		return err
	}
	var r io.Reader = bytes.NewReader(text)
	if more != nil {
		r = io.MultiReader(r, more)
	}
	return s.sendText(ctx, "reply", r)
}

// treeArg, as the second argument of REMOTE DIRECTORY, asks a kerf
// server for the listing of the whole tree under what the first names
// (protocol.md §8; capas3ListsTree).
const treeArg = "kerf-tree"

// A TreeLister is a ServerFS that lists trees (filestore.Dir.ListTree):
// the listing lines of what spec names and of everything under it, in
// form.
type TreeLister interface {
	ListTree(spec string, form TreeForm, w io.Writer) error
}

// A TreeForm is what a tree listing carries beyond its entries' lines.
type TreeForm struct {
	// Ino: the lines with inode numbers (framing.AppendListingLineIno),
	// for a peer that takes them (capas4Inodes).
	Ino bool
	// Problems: a line (framing.AppendListingProblem) for each directory
	// whose contents could not be listed, asked by a client that shows
	// the tree (kerf ls -R) rather than checks it; without, they are
	// left out, as a sender's quick check wants (protocol.md §8).
	Problems bool
}

// problemsArg, as REMOTE DIRECTORY's third argument after treeArg, asks
// for the tree listing's problem lines (TreeForm.Problems). A kerf
// server from before it ignores it: the listing comes without them.
const problemsArg = "kerf-problems"

// A ListWriter is a ServerFS that writes the listing of REMOTE
// DIRECTORY as it makes it (filestore.Dir.ListTo), in form, so that a
// directory of any size costs the server only the packets in flight; it
// is asked rather than List and ListLiteral. Only a ListWriter's
// listing carries times to the nanosecond (ListForm.Exact).
type ListWriter interface {
	ListTo(spec string, form ListForm, w io.Writer) error
}

// A ListForm is how a listing is asked for: Exact, with times to the
// nanosecond (framing.AppendListingLineExact), as tree listings have
// them, asked by a kerf client with exactArg so that `ls --json` and
// `ls -R --json` give a file the same time; Literal, of the one name as
// it is (LiteralFS).
type ListForm struct {
	Exact, Literal bool
}

// exactArg, as REMOTE DIRECTORY's second argument, asks a kerf server
// for its listing with times to the nanosecond (ListForm.Exact). A server
// that does not know it lists as it always does, to the second.
const exactArg = "kerf-exact"

// LiteralFS is what a ServerFS implements to take a name as it is for
// REMOTE DELETE and DIRECTORY (and kerf-tree), asked by REMOTE SET
// kerf-literal: a client's escaped name ("a\[1\].txt") whose file is
// absent must not delete, or list, the files it would match as a
// pattern (QA: rm of a bracketed name deleted its neighbours).
type LiteralFS interface {
	RemoveLiteral(name string) error
	ListLiteral(name string) (string, error)
	ListTreeLiteral(name string, form TreeForm, w io.Writer) error
}

// literalTree is a LiteralFS as the TreeLister of its literal listing.
type literalTree struct{ l LiteralFS }

func (t literalTree) ListTree(name string, form TreeForm, w io.Writer) error {
	return t.l.ListTreeLiteral(name, form, w)
}

// literalParam is kerf's REMOTE SET parameter (value "on") asking a
// server to take the name of the next REMOTE DELETE or DIRECTORY as it
// is, never as a pattern (protocol.md §8). A server that does not know
// it refuses it, so the command that would have matched is never sent.
const literalParam = "kerf-literal"

// TakeNextLiterally asks a kerf server to take the name of the next
// REMOTE DELETE or DIRECTORY (Generic 'E', 'D', or ListTree) as it is.
// A classic Kermit server, found so by the I exchange before it, is not
// asked: ErrClassicPeer.
func (s *Session) TakeNextLiterally(ctx context.Context) error {
	defer s.flush()
	defer s.forText()()
	if err := s.initServer(ctx); err != nil {
		return s.abort(err)
	}
	if !s.peerWasKerf {
		// (Known only now: a login needs no I exchange.)
		return ErrClassicPeer
	}
	_, err := s.generic(ctx, 'S', literalParam, "on")
	return err
}

// ErrClassicPeer: the request is kerf's own, and the peer a classic
// Kermit; it was not sent (only the I exchange that told).
var ErrClassicPeer = errors.New("kermit: the peer is a classic Kermit")

// serveTree answers REMOTE DIRECTORY spec kerf-tree: the listing streams
// from the walk as it goes, so that a tree of any size costs the server
// only the packets in flight.
func (s *Session) serveTree(ctx context.Context, seq int, list func(spec string, w io.Writer) error, spec string) error {
	pr, pw := io.Pipe()
	defer pr.Close() // ends a walk the session gave up on
	go func() { pw.CloseWithError(list(spec, pw)) }()
	head := make([]byte, s.neg.maxData)
	n, err := io.ReadFull(pr, head)
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		return s.reply(ctx, seq, head[:n], nil)
	case nil:
		return s.reply(ctx, seq, head, pr)
	}
	return err
}

// serveGetListing answers REMOTE DIRECTORY kerf-get(-r): the files a
// GET of spec would send, one listing line each (what a resuming GET's
// quick check compares). The lines go as the walk finds the files
// (matchEach), as serveTree's do, so that the listing of a big tree is
// never held whole.
func (s *Session) serveGetListing(ctx context.Context, seq int, fsys ServerFS, spec string, recursive bool) error {
	line := func(b []byte, f OutgoingFile) []byte {
		if f.Dir || f.Open == nil || f.Size < 0 {
			return b
		}
		return framing.AppendListingLineExact(b, framing.ListingEntry{Mode: f.Mode.Perm(), Size: f.Size, ModTime: f.ModTime, Name: f.Name})
	}
	return s.serveTree(ctx, seq, func(spec string, w io.Writer) error {
		bw := bufio.NewWriterSize(w, 32<<10)
		var b []byte
		var werr error
		_, err := matchEach(fsys, spec, recursive, nil, func(f OutgoingFile) bool {
			b = line(b[:0], f)
			_, werr = bw.Write(b)
			return werr == nil
		})
		if err == nil {
			err = werr
		}
		if err == nil {
			err = bw.Flush()
		}
		return err
	}, spec)
}

// sendText sends text as an X (display) transaction after S.
func (s *Session) sendText(ctx context.Context, title string, text io.Reader) error {
	name, err := s.encodeField([]byte(title))
	if err != nil {
		return err
	}
	// The X takes a file id, as an F does: the receiver counts it
	// (recvFileID), and a file that follows in the session (a GET after
	// a long listing) must have the id its blocks carry.
	if _, err := s.queue(ctx, 'X', name, 0); err != nil {
		return err
	}
	s.sendFileID++ // (once it went)
	src := newDataSource(text, true)
	send := func() error {
		data, n := s.neg.out.Encode(nil, src.pending(), s.neg.maxData)
		src.consume(n)
		// Streaming, as file data goes: a receiver that streams ACKs no
		// D, and a window waiting for those ACKs would stall once full.
		if s.neg.streaming {
			return s.stream(ctx, data, n)
		}
		_, err := s.queue(ctx, 'D', data, n)
		return err
	}
	for {
		if err := src.fill(); err != nil {
			// What the text had before its error goes first: the lines
			// a listing made before it failed (review 49: lost).
			for len(src.pending()) > 0 {
				if serr := send(); serr != nil {
					return serr
				}
			}
			return err
		}
		if src.empty() {
			break
		}
		if err := send(); err != nil {
			return err
		}
	}
	for _, t := range []byte{'Z', 'B'} {
		sl, err := s.queue(ctx, t, nil, 0)
		if err != nil {
			return err
		}
		if err := s.await(ctx, sl); err != nil {
			return err
		}
	}
	return nil
}

// getArg and getRecursiveArg, as the second argument of REMOTE
// DIRECTORY, ask a kerf server for the listing of the regular files a
// GET (R) or GET /RECURSIVE (V, J) of the first would send, under the
// names its F packets would give them (protocol.md §8): what a resuming
// client compares with its own files (GetOptions.Skip).
const (
	getArg          = "kerf-get"
	getRecursiveArg = "kerf-get-r"
)

// ErrReadOnly is an Authorizer's refusal of a send ("S") to a user who
// may only read: a kerf client's S then goes on all the same, for its
// kerf-skip text, with every file refused.
var ErrReadOnly = errors.New("read-only access: the server takes no files from you")

// fromKerf reports whether the Send-Init p comes from a kerf peer.
func fromKerf(p framing.Packet) bool {
	peer, err := framing.ParseParams(p.Data)
	return err == nil && peer.Capas2&capas2RawOK != 0
}

// refusingStore refuses every file with err.
type refusingStore struct{ err error }

func (r refusingStore) Create(string) (Incoming, error) { return nil, r.err }
func (r refusingStore) ReceiveDir(string) error         { return r.err }

// skipTitle is the title of the text a resuming kerf client sends a
// kerf server before a GET (S, X, D..., Z, B): listing lines of the
// files it has whole, by F name. The GET that follows leaves out each
// file still of that size, time and mode (protocol.md §6, item 7).
const skipTitle = "kerf-skip"

// skipSink takes the text of a kerf-skip transaction into the session's
// pending skip set (Session.skipPending), line by line.
type skipSink struct {
	s    *Session
	line []byte
	// long: the line under way is longer than any listing line of a
	// name kerf takes; the rest of it, up to its newline, is dropped.
	long bool
}

// newSkipSink starts a kerf-skip text: what an earlier one left pending
// (cut off) is dropped.
func newSkipSink(s *Session) *skipSink {
	s.skipPending.drop()
	s.skipPending = nil
	return &skipSink{s: s}
}

func (k *skipSink) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !k.long && len(k.line)+len(part) <= 2*maxSkipName+100 {
			k.line = append(k.line, part...)
		} else {
			k.long = true
		}
		if i < 0 {
			break
		}
		b = b[i+1:]
		if !k.long {
			k.add(string(k.line))
		}
		k.line, k.long = k.line[:0], false
	}
	return n, nil
}

// add puts one line's file in the pending skip set, within the bounds.
func (k *skipSink) add(line string) {
	s := k.s
	e, err := framing.ParseListingLine(line)
	if err != nil || len(e.Name) > maxSkipName || s.skip.len()+s.skipPending.len() >= maxSkip {
		return
	}
	if s.skipPending == nil {
		s.skipPending = newSkipSet(s.skipSeed(), s.skipAccountless)
	}
	s.skipPending.add(e)
}

// commit adds the text's files to the session's skip set: at the text's
// Z, so that a text cut off (the client told then that the server did
// not take it) leaves out no file of the GET without the client's
// knowing.
func (k *skipSink) commit() {
	s := k.s
	if s.skipPending == nil {
		return
	}
	if s.skip == nil {
		s.skip = newSkipSet(s.skipSeed(), s.skipAccountless)
	}
	s.skip.merge(s.skipPending)
	s.skipPending = nil
}

// skipSeed is the session's key for its skip sets' hashes.
func (s *Session) skipSeed() maphash.Seed {
	if !s.skipSeeded {
		s.skipKey, s.skipSeeded = maphash.MakeSeed(), true
	}
	return s.skipKey
}

// dropSkip forgets the session's skip sets (after the GET they were
// for, or at the session's end).
func (s *Session) dropSkip() {
	s.skip.drop()
	s.skipPending.drop()
	s.skip, s.skipPending = nil, nil
}

// maxTypeBytes bounds what REMOTE TYPE shows: it is for looking at a
// file, which a GET fetches.
const maxTypeBytes = 1 << 20

// typeFiles is the text of the files spec names (REMOTE TYPE), one after
// another.
func typeFiles(fsys ServerFS, spec string) ([]byte, error) {
	files, err := fsys.Match(spec, false)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no files match %s", spec)
	}
	var text []byte
	typed := 0
	for _, f := range files {
		if f.Dir || f.Open == nil {
			continue
		}
		if f.Size > int64(maxTypeBytes-len(text)) {
			return nil, fmt.Errorf("%s is too long to type (more than %d bytes): GET it", f.Name, maxTypeBytes)
		}
		r, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(r, int64(maxTypeBytes-len(text))+1))
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if len(text)+len(b) > maxTypeBytes {
			return nil, fmt.Errorf("%s is too long to type (more than %d bytes): GET it", f.Name, maxTypeBytes)
		}
		text = append(text, b...)
		typed++
	}
	if typed == 0 {
		return nil, fmt.Errorf("%s names no file to type", spec)
	}
	return text, nil
}

// congestionParam is kerf's REMOTE SET parameter asking a server to send
// on the session's data connections with the named TCP congestion
// control (protocol.md §8): a fetching client's --congestion.
const congestionParam = "kerf-congestion"

// shareParam is kerf's REMOTE SET parameter asking for a share of the
// next GET: value "k/n", share k of n (protocol.md §8).
const shareParam = "kerf-share"

// share is share k of n of a GET's files: those whose name hashes to k
// (FNV-1a, modulo n), so that n sessions of one client, each asking for
// its own, fetch every file once between them, whatever order the
// server walks in; directories are in every share (each session makes
// them before their files). n 0 or 1 is the whole.
type share struct{ k, n int }

// maxShares bounds n: kerf clients open at most 16 sessions.
const maxShares = 64

func parseShare(v string) (share, error) {
	var sh share
	if _, err := fmt.Sscanf(v, "%d/%d", &sh.k, &sh.n); err != nil || sh.n < 1 || sh.n > maxShares || sh.k < 0 || sh.k >= sh.n || fmt.Sprintf("%d/%d", sh.k, sh.n) != v {
		return share{}, fmt.Errorf("bad %s value %q (k/n, 0 <= k < n <= %d)", shareParam, v, maxShares)
	}
	return sh, nil
}

func (sh share) String() string { return fmt.Sprintf("%d/%d", sh.k, sh.n) }

// has reports whether the file name is in share sh.
func (sh share) has(name string) bool {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32()%uint32(sh.n)) == sh.k
}
