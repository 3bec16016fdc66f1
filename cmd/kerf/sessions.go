package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/auth"
	"kerf/control"
	"kerf/datachan"
	"kerf/kermit"
)

// maxSessions bounds --sessions: each is a login, a control connection
// and its data connections on the server (which allows 16 connections
// from one address by default).
const maxSessions = 16

// defaultSessions is --sessions' default: a second session spreads the
// per-file work of both ends over two cores (2,000 x 16 KiB on loopback:
// 0.154 s against 0.180 s, 200 x 4 MiB 0.606 against 0.676 s;
// bench/ab-small.sh, docs/benchmarks.md).
const defaultSessions = 2

// longPathSessions is the default instead where the login's round trip
// is longPath or more: there a session's window, not the cores, is what
// limits (2,000 x 16 KiB at 50 ms and 100 Mbit/s, bench/wan-small.sh:
// 10.5 s with one session, 6.0 with two, 3.8 with four, 4.2 with eight;
// rsync 3.6).
const (
	longPathSessions = 4
	longPath         = 5 * time.Millisecond
)

// sessionsFor is the number of sessions to use for a send: the flag's,
// or by default by the path the first session measured.
func sessionsFor(c *cli.Context, first *control.Client) int {
	if !c.IsSet("sessions") && first.Session().RoundTrip() >= longPath {
		return longPathSessions
	}
	return c.Int("sessions")
}

// minFilesPerSession: fewer files than this per session do not repay a
// session's login (a TLS handshake, REMOTE LOGIN, Send-Init: a few round
// trips).
const minFilesPerSession = 4

// breakEvenFiles and bigSession: by default (no --sessions), n sessions
// are opened only where they repay the n-1 beyond the first, each of
// which costs its setup: its dial, TLS handshake and login, and on a
// long path the groups that make the directories before any file and
// give them their attributes after the last (about eight round trips in
// all), or a few milliseconds of both ends' CPU on a LAN. A session
// carries about ten small files a round trip (a Kermit window of 31
// packets, three a file), so the files the others take, files*(n-1)/n,
// must be about a hundred: measured (docs/benchmarks.md, forty-first
// session), at a 50 ms round trip one session beat four below about 130
// files and two below about 170, and on loopback two sessions were level
// with one from 200 to 400 files of 16 KiB. Or the files are big, and
// the setup small beside them: bigSession bytes a session.
const (
	breakEvenFiles = 96
	bigSession     = 64 << 20
)

// worthSessions is how many of n sessions (n already at most one per
// minFilesPerSession files) to open by default for files files: n, or 1
// where the others would not repay their setup. size, called only then,
// is the files' bytes (-1: not known, which keeps n).
func worthSessions(n, files int, size func() int64) int {
	if n <= 1 || files*(n-1) >= breakEvenFiles*n {
		return n
	}
	if b := size(); b < 0 || b >= int64(n)*bigSession {
		return n
	}
	return 1
}

// sizeOf sums the sizes of files, looking at those the walk did not
// stat (worthSessions asks only for fewer than 2*breakEvenFiles): -1 if
// one cannot be looked at, or files is nil (not kept).
func sizeOf(files []kermit.OutgoingFile) int64 {
	if files == nil {
		return -1
	}
	var sum int64
	for _, f := range files {
		switch {
		case f.Dir:
		case f.Size >= 0:
			sum += f.Size
		case f.Path == "":
			return -1
		default:
			fi, err := os.Stat(f.Path)
			if err != nil {
				return -1
			}
			sum += fi.Size()
		}
	}
	return sum
}

// moreSessions opens n more sessions of the login cfg (the password, if
// any, asked once already) to the machine first reached, and makes dir
// their current directory, as the first session's. It returns those that
// opened, and the first error of those that did not: the transfer goes
// on with fewer.
func moreSessions(ctx context.Context, cfg control.ClientConfig, to *control.Client, n int, dir string) ([]*control.Client, error) {
	cfg.DialAddr = to.RemoteAddr().String()
	var mu sync.Mutex
	var out []*control.Client
	var first error
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A server that throttles this address (a failed login
			// there in the last minutes) checks one login at a time and
			// has the others wait a moment: they wait, rather than the
			// command going on with fewer sessions (QA as: 2 of 8).
			cl, err := dialAfterThrottleWithin(ctx, cfg, extraSessionBudget, false)
			if err == nil && dir != "" {
				if _, err = cl.Generic(ctx, 'C', dir); err != nil {
					cl.Close()
					err = fmt.Errorf("destination %s: %w", dir, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			out = append(out, cl)
		}()
	}
	wg.Wait()
	return out, first
}

// reconnectFlag is send's and get's --reconnect.
var reconnectFlag = &cli.DurationFlag{Name: "reconnect", Value: defaultReconnect,
	Usage: fmt.Sprintf("when the connection to the server is lost mid-transfer (reset, server restarted), keep dialling it for up to this long (after %v, then twice as long each time, at most 5 s apart) and go on where the transfer stopped, resuming the files cut off (a kerf server; 0: fail at once, --resume goes on later)", reconnectWait),
	Action: func(_ *cli.Context, d time.Duration) error {
		if d < 0 {
			return usageErr("--reconnect %v: a time to keep dialling cannot be negative (0: not at all)", d)
		}
		return nil
	}}

// defaultReconnect and reconnectWait: dials over two minutes, long
// enough for a server to restart or a NAT path to come back, 1 s, 2 s,
// 4 s and then every 5 s (kermit.Reconnect).
const (
	defaultReconnect = 2 * time.Minute
	reconnectWait    = time.Second
)

// successors returns the kermit.Reconnect of a send or get whose first
// session is first, logged in as cfg: a successor logs in again, to the
// machine first reached, goes into dir (if set), tells events, and takes
// the place in *clients of the client it follows, which is closed (the
// server counts a client's sessions) and kept in *gone (its data still
// counted). Nil with --reconnect 0 or to a classic server (one
// connection at a time; no resume of kerf's).
func successors(c *cli.Context, cfg control.ClientConfig, first *control.Client, dir string, events func(kermit.Event), clients, gone *[]*control.Client) *kermit.Reconnect {
	budget := c.Duration("reconnect")
	if budget <= 0 || cfg.Classic {
		return nil
	}
	cfg.DialAddr = first.RemoteAddr().String()
	var mu sync.Mutex // (each session's successor is dialled by its own goroutine)
	return &kermit.Reconnect{For: budget, Wait: reconnectWait, Dial: func(ctx context.Context, lost *kermit.Session) (*kermit.Session, error) {
		// The lost one is closed, but keeps its place until a successor
		// takes it: a later command (the next GET of getEach) fails on
		// it at once, and is followed in its turn.
		mu.Lock()
		at := slices.IndexFunc(*clients, func(cl *control.Client) bool { return cl.Session() == lost })
		if at >= 0 {
			(*clients)[at].Close()
		}
		mu.Unlock()
		cl, err := control.Dial(ctx, cfg)
		if errors.Is(err, control.ErrCredentials) || errors.Is(err, auth.ErrHostKeyChanged) || errors.Is(err, auth.ErrHostUnknown) {
			// Refused for what a second try would bring again (not a
			// login throttled or a server's root unreadable for now).
			return nil, fmt.Errorf("%w: %w", kermit.ErrNoRedial, err)
		}
		if err != nil {
			return nil, err
		}
		if dir != "" {
			if _, err := cl.Generic(ctx, 'C', dir); err != nil {
				cl.Close()
				var pe *kermit.PeerError
				if errors.As(err, &pe) {
					// The directory is gone, or not ours any more.
					err = fmt.Errorf("%w: %w", kermit.ErrNoRedial, err)
				}
				return nil, fmt.Errorf("destination %s: %w", dir, err)
			}
		}
		cl.Session().SetEvents(events)
		mu.Lock()
		defer mu.Unlock()
		if at >= 0 {
			*gone = append(*gone, (*clients)[at])
			(*clients)[at] = cl
		} else {
			*gone = append(*gone, cl) // (not one of ours: counted, and closed at the end)
		}
		return cl.Session(), nil
	}}
}

// regularFiles counts the files of files that are not directories.
func regularFiles(files []kermit.OutgoingFile) int {
	n := 0
	for _, f := range files {
		if !f.Dir {
			n++
		}
	}
	return n
}

// fdsPerSession is about what one session holds open: its control and
// data connections, the files under way in its window, and the data
// path's own.
const fdsPerSession = 16

// sessionsWithin caps n sessions to what the process's open-file limit
// leaves room for (64 kept for the rest): past it, files fail to open,
// and a session that meets that races through the list failing files
// the others would have sent.
func sessionsWithin(n int) int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<20 {
		return n
	}
	return max(1, min(n, (int(rl.Cur)-64)/fdsPerSession))
}

// The --sessions flags of send and get.
var (
	sendSessionsFlag = &cli.IntFlag{Name: "sessions", Value: defaultSessions,
		DefaultText: fmt.Sprintf("%d, %d where the round trip is %v or more", defaultSessions, longPathSessions, longPath),
		Usage:       fmt.Sprintf("Kermit sessions sending files side by side, 1-%d, each its own login and connections, taking the next file when ready (one per %d files at most; by default more than one only for about %d files or more, %d for the %d sessions of a long path, or %d MiB a session, which repay each session's setup): more for many files over a long path, where one session's window carries about 10 files a round trip", maxSessions, minFilesPerSession, 2*breakEvenFiles, breakEvenFiles*longPathSessions/(longPathSessions-1), longPathSessions, bigSession>>20)}
	getSessionsFlag = &cli.IntFlag{Name: "sessions", Value: defaultSessions,
		DefaultText: fmt.Sprintf("%d, %d where the round trip is %v or more; with -r", defaultSessions, longPathSessions, longPath),
		Usage:       fmt.Sprintf("Kermit sessions fetching side by side, 1-%d, each its own login and connections and its share of the files (from a kerf server): more for many files over a long path", maxSessions)}
)

// noteFewerSessions says that only opened of want sessions opened, and
// why (the server may limit sessions from one address): on stderr when
// --sessions was given, else in the log.
func noteFewerSessions(c *cli.Context, opened, want int, err error) {
	if c.Context.Err() != nil {
		return // interrupted: said once, as such (QA af: "login: context canceled")
	}
	msg := fmt.Sprintf("%d of %d sessions opened: %v", opened, want, err)
	if c.IsSet("sessions") {
		fmt.Fprintln(os.Stderr, "kerf: "+msg)
	} else {
		logger(c).Info(msg)
	}
}

// checkSessions refuses a --sessions out of range.
func checkSessions(c *cli.Context) error {
	if n := c.Int("sessions"); n < 1 || n > maxSessions {
		return usageErr("--sessions %d: must be between 1 and %d", n, maxSessions)
	}
	return nil
}

// sessionsOf returns the clients' Kermit sessions.
func sessionsOf(clients []*control.Client) []*kermit.Session {
	out := make([]*kermit.Session, len(clients))
	for i, cl := range clients {
		out[i] = cl.Session()
	}
	return out
}

// wireBytes is a reporter's wire function over every session's data
// connections: the sum of the count of their Stats, and how the data
// travelled smaller than the files: "zstd" (compressed), "holes" (a
// sparse file's holes as blocks of zeros), both, or "" (as it is).
func wireBytes(clients, gone *[]*control.Client, count func(datachan.Stats) int64) func() (int64, string) {
	return func() (n int64, how string) {
		var zeros int64
		for _, cl := range append(slices.Clone(*clients), *gone...) {
			st := cl.DataStats()
			n += count(st)
			zeros += st.ZeroBytesSent + st.ZeroBytesReceived
		}
		var ways []string
		if (*clients)[0].DataCompressed() {
			ways = append(ways, "zstd")
		}
		if zeros > 0 {
			ways = append(ways, "holes")
		}
		return n, strings.Join(ways, ", ")
	}
}

// closeSuccessors closes, at a command's end, the clients of clients
// and gone that are not among orig (the command's own, which it closes
// itself after what it still has to say on them, such as a classic
// server's directory put back).
func closeSuccessors(clients, gone *[]*control.Client, orig []*control.Client) {
	for _, cl := range append(slices.Clone(*clients), *gone...) {
		if !slices.Contains(orig, cl) {
			cl.Close()
		}
	}
}
