package control

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
	"unicode"

	"kerf/kermit"
)

// XferLog writes one line per finished or failed file in the xferlog
// format of wu-ftpd and ProFTPD (xferlog(5)), so that existing log
// analysers read kerf's transfers:
//
//	current-time transfer-time remote-host file-size filename transfer-type
//	special-action-flag direction access-mode username service-name
//	authentication-method authenticated-user-id completion-status
//
// for example
//
//	Sun Nov 29 22:08:36 2026 2 192.0.2.7 1048576 /backup/a.bin b _ i r alice kerf 0 * c
//
// Fields are separated by single spaces, so characters that would split
// a field (white space, control characters) are written as '_' in names,
// as wu-ftpd and ProFTPD do. An XferLog is safe for concurrent use; each
// line is written with a single Write call.
type XferLog struct {
	mu sync.Mutex
	w  io.Writer

	// Service is the service-name field (default "kerf").
	Service string
	// Now gives the current-time field for Record (default time.Now).
	Now func() time.Time
}

// NewXferLog returns an XferLog writing to w.
func NewXferLog(w io.Writer) *XferLog {
	return &XferLog{w: w, Service: "kerf", Now: time.Now}
}

// Swap has the log write to w from the next line on, and returns the
// writer it had (for a log reopened after its file was rotated).
func (l *XferLog) Swap(w io.Writer) io.Writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.w
	l.w = w
	return old
}

// XferEntry is one xferlog line.
type XferEntry struct {
	Time       time.Time     // when the transfer ended (current-time), in Time's location
	Duration   time.Duration // transfer-time; written in whole seconds, at least 1
	RemoteHost string        // remote-host; a "host:port" is cut to the host
	Bytes      int64         // file-size: bytes moved in this transfer
	Name       string        // filename, as the server names it
	Text       bool          // transfer-type 'a' (text) instead of 'b' (binary)
	Sending    bool          // direction 'o' (server to client) instead of 'i'
	User       string        // username; "" logs access-mode 'a' and user "anonymous"
	Complete   bool          // completion-status 'c' instead of 'i'
}

// Record logs a kermit.Event for the session with remoteHost and the
// authenticated user ("" if none): a file sent (FileDone with Sending)
// or received (FileSaved: durable under its final name, not only
// verified) as complete, and FileFailed or FileSkipped as incomplete.
// Other kinds are ignored. The event's Bytes are the bytes moved in
// this session (after a resume, not the file's size), its Sending says
// the server sent the file, and its Path, when set, is the file's name
// in the served tree (logged as "/" + Path, else the peer's name).
func (l *XferLog) Record(e kermit.Event, remoteHost, user string) error {
	switch {
	case e.Kind == kermit.FileDone:
		// Logged once its data is verified, either way, as an FTP
		// server logs a transfer at its end: a received file's rename
		// to its name may wait for a batch, and a server that died
		// before it reported the batch saved logged none of its
		// files, which a resume then found whole (QA).
	case e.Kind == kermit.FileSaved:
		return nil // logged at its FileDone
	case errors.Is(e.Err, kermit.ErrNotSaved) && e.Sending:
		return nil // the receiver's to keep: logged at its FileDone
	case errors.Is(e.Err, kermit.ErrNotSaved):
		// Verified, logged, and then not saved under its name: a line
		// saying so follows.
	case errors.Is(e.Err, kermit.ErrAlreadyThere):
		return nil // nothing moved: a resume found the file whole
	case errors.Is(e.Err, kermit.ErrPassedOver):
		return nil // no file to move: a FIFO, a link to a directory
	case e.Kind == kermit.FileFailed, e.Kind == kermit.FileSkipped:
	default:
		return nil
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	name := e.Name
	if e.Path != "" {
		name = "/" + strings.TrimPrefix(e.Path, "/")
	}
	return l.Write(XferEntry{
		Time:       now(),
		Duration:   e.Duration,
		RemoteHost: remoteHost,
		Bytes:      e.Bytes - e.Kept, // kept ranges did not move
		Name:       name,
		Sending:    e.Sending,
		User:       user,
		Complete:   e.Kind == kermit.FileDone || e.Kind == kermit.FileSaved,
	})
}

// Write logs one entry.
func (l *XferLog) Write(e XferEntry) error {
	line := l.format(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.w, line); err != nil {
		return fmt.Errorf("control: xferlog: %w", err)
	}
	return nil
}

func (l *XferLog) format(e XferEntry) string {
	secs := int64((e.Duration + time.Second/2) / time.Second)
	if secs < 1 {
		secs = 1 // analysers divide by it
	}
	host := e.RemoteHost
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	typ, dir, mode, user, status := "b", "i", "r", e.User, "i"
	if e.Text {
		typ = "a"
	}
	if e.Sending {
		dir = "o"
	}
	if user == "" {
		mode, user = "a", "anonymous"
	}
	if e.Complete {
		status = "c"
	}
	service := l.Service
	if service == "" {
		service = "kerf"
	}
	return fmt.Sprintf("%s %d %s %d %s %s _ %s %s %s %s 0 * %s\n",
		e.Time.Format("Mon Jan _2 15:04:05 2006"), secs, field(host), max(e.Bytes, 0), field(e.Name),
		typ, dir, mode, field(user), field(service), status)
}

// field makes s one space-free xferlog field, with nothing that would
// change how a terminal shows the line: format characters such as
// U+202E (right-to-left override) would let a name show reversed or
// hide what follows it (QA).
func field(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return '_'
		}
		return r
	}, s)
}
