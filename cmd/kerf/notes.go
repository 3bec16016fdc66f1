package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// noteHandler writes a client's log records as it writes its other
// words to a person, "kerf: what (name=value, …)", rather than as
// slog's time=… level=WARN msg=… records among them (QA). It is the
// client's handler at the default level (warn); asked for more
// (--log-level info or debug), a client writes slog's records, which
// are for reading with the server's.
type noteHandler struct {
	level slog.Leveler
	attrs []slog.Attr
	out   func(string)
}

func (h *noteHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *noteHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("kerf: ")
	if r.Level >= slog.LevelError {
		b.WriteString("error: ")
	}
	b.WriteString(printable(r.Message))
	n := 0
	add := func(a slog.Attr) bool {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return true
		}
		if n == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		n++
		b.WriteString(a.Key)
		b.WriteByte('=')
		v := printable(a.Value.String())
		if v == "" || strings.ContainsAny(v, " ,()\"=") {
			v = `"` + strings.ReplaceAll(v, `"`, `\"`) + `"`
		}
		b.WriteString(v)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if n > 0 {
		b.WriteByte(')')
	}
	b.WriteByte('\n')
	h.out(b.String())
	return nil
}

func (h *noteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &noteHandler{level: h.level, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...), out: h.out}
}

// WithGroup is not used by kerf's loggers; the names stay unqualified.
func (h *noteHandler) WithGroup(string) slog.Handler { return h }

// The progress bar on the terminal, if one is shown: a note clears it
// first, as the reporter's own lines do, rather than being written on
// after it (review). The bar draws itself again at its next update.
var (
	liveBarMu sync.Mutex
	liveBar   interface{ Clear() error }
)

func setLiveBar(b interface{ Clear() error }) {
	liveBarMu.Lock()
	liveBar = b
	liveBarMu.Unlock()
}

// writeNote writes a note to stderr, the progress bar cleared first.
func writeNote(s string) {
	liveBarMu.Lock()
	defer liveBarMu.Unlock()
	if liveBar != nil {
		liveBar.Clear()
	}
	os.Stderr.WriteString(s)
}
