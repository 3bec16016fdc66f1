package control

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
)

// sessionLogHandler is what a session's engine logs through. It raises
// to warn the engine's info records whose error is the server's own
// storage failing (a full disk or quota, an I/O
// error, a read-only file system, no permission on its files): the
// engine logs a refused or failed file at info, as the client's
// business, but these the server's operator must hear of at the
// default level (QA: a server whose disk filled said nothing). It also
// names the session's user, if user says one, on every record that does
// not (the engine's logger was made before the login: QA, its lines
// could only be joined to a user by peer=).
type sessionLogHandler struct {
	slog.Handler
	user func() string
}

func (h sessionLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, l) || l == slog.LevelInfo && h.Handler.Enabled(ctx, slog.LevelWarn)
}

func (h sessionLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && storageFailed(r) {
		r.Level = slog.LevelWarn
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	if h.user != nil && !hasAttr(r, "user") {
		if u := h.user(); u != "" {
			r = r.Clone()
			r.AddAttrs(slog.String("user", u))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h sessionLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return sessionLogHandler{h.Handler.WithAttrs(as), h.user}
}

func (h sessionLogHandler) WithGroup(name string) slog.Handler {
	return sessionLogHandler{h.Handler.WithGroup(name), h.user}
}

// hasAttr reports whether r has an attribute called key.
func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}

// storageErrnos are the failures of a server's own storage, and of its
// descriptors (QA: 35 of 60 uploads refused for "too many open files",
// and not a line in the log).
var storageErrnos = []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EFBIG, syscall.EMFILE, syscall.ENFILE}

// storageFailed reports whether one of r's attributes is an error of
// the server's storage (storageErrnos).
func storageFailed(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			for _, e := range storageErrnos {
				if errors.Is(err, e) {
					found = true
					return false
				}
			}
		}
		return true
	})
	return found
}
