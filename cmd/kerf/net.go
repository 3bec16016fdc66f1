package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"kerf/auth"
	"kerf/control"
	"kerf/datachan"
	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// parseTarget splits [USER@]HOST[:PORT][/PATH] (IPv6 hosts in
// brackets). The '/' after the host only separates, like scp's ':': PATH
// is relative to the server's directory (HOST//PATH is absolute), which
// is what a C-Kermit server needs; a kerf server reads both from the top
// of its tree. A USER stays at the front of addr (USER@HOST:PORT), for
// dialConfig to log in as (userAt), so that paths of two users are not
// taken for one login's.
func parseTarget(s string) (addr, rpath string, err error) {
	var user string
	head, _, _ := strings.Cut(s, "/")
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		// The last '@' before the path: a user name may have its own
		// (alice@example.com@host), a host name has none.
		if user, s = s[:at], s[at+1:]; user == "" {
			return "", "", usageErr("no user before the @ in %q", head)
		}
	}
	addr, rpath, err = parseHostPath(s)
	if err == nil && user != "" {
		addr = user + "@" + addr
	}
	return addr, rpath, err
}

// userAt splits the USER@ that parseTarget left at the front of addr, if
// it did.
func userAt(addr string) (user, hostPort string, ok bool) {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return "", addr, false
	}
	return addr[:at], addr[at+1:], true
}

// parseHostPath is parseTarget without a user.
func parseHostPath(s string) (addr, rpath string, err error) {
	hostEnd := 0
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]")
		if i < 0 {
			return "", "", usageErr("bad address %q", s)
		}
		hostEnd = i
	}
	if i := strings.IndexByte(s[hostEnd:], '/'); i >= 0 {
		addr, rpath = s[:hostEnd+i], s[hostEnd+i+1:]
	} else {
		addr = s
	}
	if addr == "" {
		return "", "", usageErr("no host in %q", s)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = strings.Trim(addr, "[]"), fmt.Sprint(control.DefaultPort)
		if strings.Count(host, ":") > 1 && net.ParseIP(host) == nil {
			return "", "", usageErr("bad address %q: an IPv6 address with a port goes in brackets: [ADDRESS]:PORT/PATH", s)
		}
	}
	if host == "" {
		return "", "", usageErr("no host in %q", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		if err != nil {
			// scp's HOST:PATH, most likely.
			return "", "", usageErr("bad port %q in %q: kerf names remote paths HOST/PATH or HOST:PORT/PATH", port, s)
		}
		return "", "", usageErr("bad port %q in %q (1-65535)", port, s)
	}
	return net.JoinHostPort(host, port), rpath, nil
}

// connFlags are every client command's: how to reach and log in.
var connFlags = []cli.Flag{
	&cli.BoolFlag{Name: "classic", Usage: "plain Kermit over TCP for peers without TLS (C-Kermit, kerf serve --allow-classic): no encryption, no data channel"},
	&cli.StringFlag{Name: "user", Aliases: []string{"u"}, EnvVars: []string{"KERF_USER"}, Usage: "log in as this user (none: anonymous); USER@HOST in a remote path names it over this"},
	&cli.StringFlag{Name: "password-file", Usage: "read the password from the first line of this file (else $KERF_PASSWORD, else the client key if there is one, else a prompt)"},
	identityFlag(),
	&cli.StringFlag{Name: "known-hosts", Value: defaultKnownHosts(), Usage: "file of pinned server keys"},
	&cli.BoolFlag{Name: "accept-new-host-key", Usage: "pin the key of a server seen for the first time without asking"},
	&cli.BoolFlag{Name: "accept-changed-host-key", Usage: "replace the pinned key of a server whose key changed (only after checking the new fingerprint)"},
	&cli.DurationFlag{Name: "idle-timeout", Value: control.DefaultIdleTimeout, Usage: "give up on a server that sends nothing and takes no data for this long while this side waits on it (a host frozen or cut off); what was under way is kept for --resume (0: wait for ever)"},
	&cli.DurationFlag{Name: "connect-timeout", Value: control.DefaultConnectTimeout, Usage: "give up on a connection to the server not made in this long (a host down, or a firewall dropping it; 0: the system's, a minute or two), and, when given, on a TLS handshake not done in this long (otherwise 15 s: a server stopped, or not a kerf server)"},
}

// clientFlags are those of send and get: the data path's and connFlags.
var clientFlags = append(dataFlags(false), connFlags...)

// remoteFlags are those of ls, mkdir, rm, rmdir and mv, which move no
// files: connFlags; the data path's are taken too, so that one set of
// flags works for every client command of a script, but not shown and
// not read from the environment.
var remoteFlags = append(append([]cli.Flag{}, connFlags...), dataFlags(true)...)

// dataFlags are the data path's flags, hidden from the help or not. The
// hidden ones read no environment variable: a bad KERF_LIMIT_RATE
// stopped kerf ls over a flag its help does not list (QA ag L7).
func dataFlags(hidden bool) []cli.Flag {
	// The tuning flags serve shows too: copies, hidden or not.
	bs, wb, cc, lr := *blockSizeFlag, *writeBehindFlag, *congestionFlag, *limitRateFlag
	bs.Hidden, wb.Hidden, cc.Hidden, lr.Hidden = hidden, hidden, hidden, hidden
	env := func(name string) []string {
		if hidden {
			return nil
		}
		return []string{name}
	}
	if hidden {
		bs.EnvVars, wb.EnvVars, cc.EnvVars, lr.EnvVars = nil, nil, nil, nil
	}
	return []cli.Flag{
		&cli.StringFlag{Name: "streams", Hidden: hidden, Value: "auto", DefaultText: "auto", Usage: fmt.Sprintf("parallel data connections, 1-%d (auto: 2 where there is more than one core, as a connection's receiver reads, checks and writes on one core; 1 to this host's own addresses, where both ends share the cores)", datachan.MaxStreams)},
		&cli.BoolFlag{Name: "plain-data", Hidden: hidden, Usage: "ask for unencrypted data connections (trusted LANs; the server must allow it; the control connection stays encrypted)"},
		&cli.BoolFlag{Name: "compress", Hidden: hidden, Aliases: []string{"z"}, EnvVars: env("KERF_COMPRESS"), Usage: "compress data blocks (zstd) both ways where that makes them smaller: for slow links and compressible files; costs CPU, so not for fast LANs (the server may refuse)"},
		&cli.BoolFlag{Name: "in-band", Hidden: hidden, EnvVars: env("KERF_IN_BAND"), Usage: "carry the file data on the control connection (TLS, Kermit D packets), opening no data connections: where only the server's control port gets through (a port forward, a firewall); slower (a tree of small files over a long path takes about 1.4 times as long as with data connections; a big file as fast at 100 Mbit/s, not on a fast LAN)"},
		&cli.BoolFlag{Name: "quic", Hidden: hidden, EnvVars: env("KERF_QUIC"), Usage: "carry the data channel over QUIC (UDP, always encrypted, one connection with quic-go's CUBIC) where the server offers it (kerf serve --quic); else TCP as usual. Not for lossy paths: TCP with --congestion bbr was 5 times faster at 0.1% loss and about 20 times at 1% (docs/benchmarks.md, \"QUIC\"), quic-go's CUBIC halving its rate at each loss; nor for a fast long one: a third of TCP's rate at 1 Gbit/s and 50 ms"},
		&bs, &wb, &cc, &lr,
	}
}

// defaultTimerSlack is serve's --timer-slack: measured at 200 µs,
// 500 µs and 1 ms (docs/benchmarks.md, "Thirty-second session"), the
// small-files time gains as much from 200 µs, the server's CPU more up
// to 1 ms; 500 µs keeps a margin under the 1 ms granularity quic-go's
// pacer works at (it sends bursts of 2 ms' worth).
const defaultTimerSlack = 500 * time.Microsecond

// maxTimerSlack bounds --timer-slack: a typo's 500ms would make every
// timer of the server that late.
const maxTimerSlack = 100 * time.Millisecond

// Data-path tuning, for both ends.
var (
	blockSizeFlag   = &cli.IntFlag{Name: "block-size", Value: datachan.DefaultBlockSize, EnvVars: []string{"KERF_BLOCK_SIZE"}, Usage: "payload bytes per data block this side sends, 1024 .. 16777216 (a server takes at most its --max-block-size, 1 MiB by default, and says so: a send's blocks are cut to it)"}
	congestionFlag  = &cli.StringFlag{Name: "congestion", EnvVars: []string{"KERF_CONGESTION"}, Usage: "TCP congestion control of the data connections this side opens or accepts, one the kernel offers (bbr, cubic, reno, ...; default: the system's); a get asks the server to send with it, the sender's being what counts, and a server takes only one its kernel lets unprivileged processes choose (net.ipv4.tcp_allowed_congestion_control), even as root; QUIC data streams use quic-go's own"}
	limitRateFlag   = &cli.StringFlag{Name: "limit-rate", EnvVars: []string{"KERF_LIMIT_RATE"}, Usage: "most bytes per second the file data may take on the wire (compressed, with -z), all connections and sessions together (as curl: 500k, 20M, 1G; K = 1024; at least 1k; 0: none). On a server: all sessions together"}
	writeBehindFlag = &cli.IntFlag{Name: "write-behind", Value: datachan.DefaultWriteBehind, EnvVars: []string{"KERF_WRITE_BEHIND"}, Usage: fmt.Sprintf("received blocks queued per data connection for a separate disk writer, 0-%d (0: the connection's reader writes them; more for storage whose writes stall)", maxWriteBehind)}
)

// maxWriteBehind bounds --write-behind: each queued block may hold up
// to a block's size of memory.
const maxWriteBehind = 1024

// pathOptions turns the tuning flags into data-path options.
func pathOptions(c *cli.Context) ([]datachan.Option, error) {
	bs := c.Int("block-size")
	if bs < 1<<10 || bs > framing.MaxBlockLen {
		return nil, usageErr("--block-size %d: must be between 1024 and %d", bs, framing.MaxBlockLen)
	}
	wb := c.Int("write-behind")
	if wb < 0 || wb > maxWriteBehind {
		return nil, usageErr("--write-behind %d: must be between 0 and %d", wb, maxWriteBehind)
	}
	if err := datachan.CheckCongestion(c.String("congestion")); err != nil {
		return nil, usageErr("--congestion: %v", err)
	}
	return []datachan.Option{datachan.WithBlockSize(bs), datachan.WithWriteBehind(wb)}, nil
}

// excludeUsage is the --exclude flags' help.
const excludeUsage = "leave out files and directories matching `PATTERN` (repeatable; like rsync's simple ones: *.tmp or .git any element of a path, a/*.o its last ones, /top/dir from the top, cache/ directories only; * ? [a-z] [!a-z] per element, no ** or [[:class:]])"

// excludeFlag leaves files out of a send; getExcludeFlag out of a get,
// which the server matches (QA ag: send's help carried get's note).
var (
	excludeFlag    = &cli.StringSliceFlag{Name: "exclude", Usage: excludeUsage}
	getExcludeFlag = &cli.StringSliceFlag{Name: "exclude", Usage: excludeUsage + "; needs a kerf server"}
)

// excludeFromFlag reads --exclude patterns from files (QA w: rsync's
// --exclude-from was missing, and a long list took as many flags).
var excludeFromFlag = &cli.StringSliceFlag{Name: "exclude-from", Usage: "read --exclude patterns from `FILE`, one a line; blank lines and lines beginning with # or ; are skipped, as rsync's (repeatable)"}

// excludePatterns is the patterns of the --exclude flags, then of the
// --exclude-from files.
func excludePatterns(c *cli.Context) ([]string, error) {
	pats := slices.Clone(c.StringSlice("exclude"))
	for _, name := range c.StringSlice(excludeFromFlag.Name) {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, usageErr("--exclude-from: %v", err)
		}
		for line := range strings.Lines(string(b)) {
			line = strings.TrimRight(line, "\r\n")
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			pats = append(pats, line)
		}
	}
	return pats, nil
}

// exclusions is the Exclusions of the --exclude flags and the
// --exclude-from files, and their patterns: of a send (local: this side
// matches them), or of a get, whose patterns go to the server (fewer).
func exclusions(c *cli.Context, local bool) (kermit.Exclusions, []string, error) {
	pats, err := excludePatterns(c)
	if err != nil {
		return nil, nil, err
	}
	parse := kermit.ParseExclusions
	if local {
		parse = kermit.ParseLocalExclusions
	}
	x, err := parse(pats)
	if err != nil {
		return nil, nil, usageErr("--exclude: %v", err)
	}
	return x, pats, nil
}

// ownRoots names the users whose root is not the server's (as
// "alice (/srv/alice)"), at most a few and then how many more.
func ownRoots(users []auth.User, root string) []string {
	var out []string
	n := 0
	for _, u := range users {
		if u.Root == "" || filepath.Clean(u.Root) == filepath.Clean(root) {
			continue
		}
		if n++; n <= 5 {
			out = append(out, fmt.Sprintf("%s (%s)", printable(u.Name), printable(u.Root)))
		}
	}
	if n > 5 {
		out = append(out, fmt.Sprintf("and %d more (kerf user list)", n-5))
	}
	return out
}

// rateLimit is the --limit-rate flag's Limiter, or nil without one.
func rateLimit(c *cli.Context) (*datachan.Limiter, error) {
	v := c.String("limit-rate")
	if v == "" {
		return nil, nil
	}
	n, err := parseRate(v)
	if err != nil {
		return nil, usageErr("--limit-rate %q: %v", v, err)
	}
	if n == 0 {
		return nil, nil // no limit
	}
	return datachan.NewLimiter(n), nil
}

// parseRate reads a rate in bytes per second as curl's --limit-rate
// takes it: a number, and k, m or g for powers of 1024 (a trailing B or
// iB allowed: 20M, 20MB, 20MiB, 1.5g).
func parseRate(v string) (int64, error) {
	s := strings.TrimSuffix(strings.TrimSpace(v), "/s")
	mult := 1.0
units:
	for unit, m := range map[string]float64{"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40} {
		for _, suffix := range []string{unit + "ib", unit + "b", unit + "i", unit} {
			if len(s) > len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
				s, mult = s[:len(s)-len(suffix)], m
				break units
			}
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("want bytes per second: a number, then k, m, g or t (500k, 20M)")
	}
	n := f * mult
	if n == 0 {
		// No limit, as rsync's --bwlimit=0 and curl's --limit-rate 0
		// (QA): a way to lift KERF_LIMIT_RATE for one command.
		return 0, nil
	}
	if n < datachan.MinRate || n > 1<<50 {
		return 0, fmt.Errorf("want between %d bytes per second (1k) and 1024t", datachan.MinRate)
	}
	return int64(n), nil
}

// checkStreams refuses a data-connection count that datachan cannot
// pair (control would otherwise clamp it without a word).
func checkStreams(flag string, n int) error {
	if n < 1 || n > datachan.MaxStreams {
		return usageErr("--%s %d: must be between 1 and %d", flag, n, datachan.MaxStreams)
	}
	return nil
}

// streamsFlag is --streams: a number, or "auto" (0: control.AutoStreams
// decides; the help's default said auto, and auto was refused, QA).
func streamsFlag(c *cli.Context) (int, error) {
	v := strings.TrimSpace(c.String("streams"))
	if v == "" || strings.EqualFold(v, "auto") {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, usageErr("--streams %q: a number of connections, 1-%d, or auto", v, datachan.MaxStreams)
	}
	return n, checkStreams("streams", n)
}

// checkInBand refuses --in-band beside --classic, and beside the flags
// of the data connections it does without when they are given on the
// command line; set in the environment (KERF_QUIC=1 for every host),
// they give way to it.
func checkInBand(c *cli.Context) error {
	if !c.Bool("in-band") {
		return nil
	}
	if c.Bool("classic") {
		return usageErr("--in-band and --classic: give one (--classic has no TLS and no data connections anyway)")
	}
	if f := dataFlagGiven(c); f != "" {
		return usageErr("--in-band opens no data connections: --%s has nothing to do", f)
	}
	return nil
}

// dataFlagGiven is the first flag about data connections given on the
// command line (not from the environment, which gives way), or "".
func dataFlagGiven(c *cli.Context) string {
	for _, f := range []string{"quic", "plain-data", "compress", "streams"} {
		if onCommandLine(f, "z") && (f == "streams" || c.Bool(f)) {
			return f
		}
	}
	return ""
}

// onCommandLine reports whether the long flag name (or, for
// "compress", -z) was given among the command's arguments, before any
// "--".
func onCommandLine(name, short string) bool {
	for _, a := range os.Args[1:] {
		if a == "--" {
			break
		}
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") || name == "compress" && (a == "-"+short || strings.HasPrefix(a, "-"+short+"=")) {
			return true
		}
	}
	return false
}

func dial(c *cli.Context, addr string) (*control.Client, error) {
	cl, _, err := dialConfig(c, addr)
	return cl, err
}

// dialConfig is dial, and also returns the configuration that logged in,
// for more sessions of the same login (the password asked once).
func dialConfig(c *cli.Context, addr string) (*control.Client, control.ClientConfig, error) {
	fail := func(err error) (*control.Client, control.ClientConfig, error) {
		return nil, control.ClientConfig{}, err
	}
	streams, err := streamsFlag(c)
	if err != nil {
		return fail(err)
	}
	if err := checkInBand(c); err != nil {
		return fail(err)
	}
	user := c.String("user")
	if u, hostPort, ok := userAt(addr); ok {
		// USER@HOST names the login as ssh's does, over --user and
		// KERF_USER.
		user, addr = u, hostPort
	}
	var key *auth.Identity
	var keyDir string
	if !c.Bool("classic") && !auth.IsAnonymous(user) {
		var err error
		if key, keyDir, err = clientKey(c); err != nil {
			return fail(err)
		}
	}
	pw, ask, err := password(c, user, addr, key != nil)
	if err != nil {
		return fail(err)
	}
	prompted := false // a password was typed at the prompt
	kh := &auth.KnownHosts{Path: c.String("known-hosts"), AcceptNew: c.Bool("accept-new-host-key"), AcceptChanged: c.Bool("accept-changed-host-key"),
		Unsaved: func(err error) {
			// As ssh: the key accepted is trusted for this connection
			// (QA ak: a read-only HOME failed the command, exit 3).
			unpinnedOnce.Do(func() {
				fmt.Fprintf(os.Stderr, "kerf: the server's key is not pinned (%v): it will be asked about again\n", err)
			})
		}}
	if kh.Path == defaultKnownHosts() {
		kh.Home = configHome()
	}
	asked, atPrompt := false, false
	if term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stderr.Fd())) {
		kh.Ask = func(addr, fp string) bool {
			// Asked again only if trusted: a question that outlasted
			// the server's handshake timeout (a no was asked twice, QA).
			asked = askTrust(c.Context, addr, fp)
			atPrompt = c.Context.Err() != nil
			return asked
		}
	}
	if c.Bool("classic") {
		fmt.Fprintln(os.Stderr, "kerf: classic mode: no TLS; the password and the data cross the network in clear")
	}
	opts, err := pathOptions(c)
	if err != nil {
		return fail(err)
	}
	limit, err := rateLimit(c)
	if err != nil {
		return fail(err)
	}
	idle := c.Duration("idle-timeout")
	if idle < 0 {
		return fail(usageErr("--idle-timeout %v: must not be negative", idle))
	}
	if idle == 0 {
		idle = -1 // control: wait for ever
	}
	connect := c.Duration("connect-timeout")
	if connect < 0 {
		return fail(usageErr("--connect-timeout %v: must not be negative", connect))
	}
	if connect == 0 {
		connect = -1 // control: the kernel's
	}
	cfg := control.ClientConfig{
		PathOpts: opts, RateLimit: limit, IdleTimeout: idle, ConnectTimeout: connect, Compress: c.Bool("compress"), Congestion: c.String("congestion"), QUIC: c.Bool("quic"),
		Addr: addr, Streams: streams, Classic: c.Bool("classic"), InBand: c.Bool("in-band"), Log: clientLogger(c),
		Kermit: kermitConfig(c), User: user, Password: pw, PlainData: c.Bool("plain-data"),
	}
	if c.IsSet("connect-timeout") && connect > 0 {
		// Given, it bounds the TLS handshake too (QA ak: 15 s whatever
		// it said).
		cfg.HandshakeTimeout = connect
	}
	var hostErr error // the server's key refused (a "no" at the prompt, say)
	cfg.VerifyHost = func(addr, fp string) error {
		err := kh.Check(addr, fp)
		if err != nil {
			hostErr = err
		}
		return err
	}
	if key != nil {
		cfg.ClientCert = &key.Cert
	}
	if ask {
		// Asked once the server is reached and its key checked, then
		// kept for the dials after (a throttled login, more sessions).
		// (Each dial gets a copy of cfg: what was typed is returned from
		// here to the dials after, not asked again, review.)
		cfg.AskPassword = func() (string, error) {
			if prompted {
				return cfg.Password, nil
			}
			pw, err := promptPassword(c.Context, fmt.Sprintf("Password for %s@%s: ", user, addr))
			if err == nil {
				prompted, cfg.Password = true, pw
			}
			return pw, err
		}
	}
	cl, err := dialWhenFree(c, cfg)
	if errors.Is(err, errAtPrompt) || err != nil && atPrompt {
		return fail(errAtPrompt) // at the password's prompt, or the key's
	}
	if err != nil && hostErr != nil {
		// Said as such, whatever the handshake then ran into: a "no"
		// given after the handshake's 15 s was said to be a silent
		// server (review).
		err = hostErr
	}
	if err != nil && asked && !errors.Is(err, control.ErrCredentials) {
		// The question may have outlasted the server's handshake
		// timeout; the key is pinned now, so try once more.
		cl, err = dialAfterThrottle(c.Context, cfg)
		if errors.Is(err, errAtPrompt) {
			return fail(err)
		}
	}
	if err != nil && prompted && !errors.Is(err, control.ErrLogin) && c.Context.Err() == nil {
		// The link failed after the password was typed: the typing may
		// have outlasted the server's time from connect to login
		// (serve --handshake-timeout). What was typed is known now, so
		// try once more; a refused login is not tried again (review).
		cl, err = dialAfterThrottle(c.Context, cfg)
	}
	if err != nil && key != nil && pw == "" && errors.Is(err, control.ErrCredentials) {
		// The key was refused (not the login for another reason, such
		// as a root the server cannot open). As ssh does, ask for the
		// password when there is someone to ask; otherwise say which
		// key it was.
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return fail(connectErr(fmt.Errorf("%w: the server did not accept the client key %s (in %s) for %s; "+
				"to authorize it, run on the server: kerf user key add %s %s", err, key.Fingerprint, keyDir, user, user, key.Fingerprint)))
		}
		fmt.Fprintf(os.Stderr, "kerf: the server did not accept the client key %s for %s\n", key.Fingerprint, user)
		if cfg.Password, err = promptPassword(c.Context, fmt.Sprintf("Password for %s@%s: ", user, addr)); err != nil {
			return fail(err)
		}
		prompted = true
		cl, err = dialAfterThrottle(c.Context, cfg)
	}
	// A mistyped password is asked for again, three tries in all, as
	// ssh and sudo do; a password from a file or the environment is not.
	for try := 1; err != nil && prompted && try < 3 && errors.Is(err, control.ErrCredentials); try++ {
		fmt.Fprintln(os.Stderr, "kerf: login refused, try again")
		if cfg.Password, err = promptPassword(c.Context, fmt.Sprintf("Password for %s@%s: ", user, addr)); err != nil {
			return fail(err)
		}
		cl, err = dialAfterThrottle(c.Context, cfg)
	}
	if err != nil && auth.IsAnonymous(user) && strings.Contains(err.Error(), "anonymous access is not enabled") {
		// No user was given (QA ao: README's examples after the first
		// name none, and the refusal did not say how to give one).
		err = fmt.Errorf("%w: log in as a user: -u USER, USER@HOST in the path, or KERF_USER", err)
	}
	if err != nil {
		return fail(connectErr(err))
	}
	cfg.AskPassword = nil // more sessions use what was typed, and ask nothing
	return cl, cfg, nil
}

// throttleWaitRE finds the wait a kerf server names when it throttles
// logins from an address ("... from your address: wait 500ms").
var throttleWaitRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`login throttled: .*wait (\S+)$`) })

// throttled reports whether err is a kerf server's refusal to check a
// login so soon after a failed one, and how long it asked to wait (at
// most 30 s).
func throttled(err error) (time.Duration, bool) {
	if err == nil || !errors.Is(err, control.ErrLogin) {
		return 0, false
	}
	m := throttleWaitRE().FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	d, perr := time.ParseDuration(m[1])
	if perr != nil {
		return 0, false
	}
	return min(d+50*time.Millisecond, 30*time.Second), true
}

// dialWhenFree is dialAfterThrottle, which a server at its session
// limits, or short of open files, has refused (a batch of transfers to
// one server at once) is dialled again within --reconnect, as a lost connection is: after 1 s,
// then twice as long each time, at most 5 s apart. Commands without
// --reconnect (ls, rm ...) fail at once.
func dialWhenFree(c *cli.Context, cfg control.ClientConfig) (*control.Client, error) {
	budget := c.Duration(reconnectFlag.Name)
	deadline := time.Now().Add(budget)
	wait := reconnectWait
	// found busy: the server is there, and a dial that fails now is one
	// more wait; so too when the command is begun again after the
	// server was lost (setupLost)
	until, waiting := redialing(c.Context)
	if waiting {
		deadline = until
	}
	for {
		cl, err := dialAfterThrottle(c.Context, cfg)
		again := errors.Is(err, control.ErrServerBusy) || errors.Is(err, control.ErrServerShort) || errors.Is(err, control.ErrDroppedAtLogin) ||
			errors.Is(err, control.ErrServerStopping) ||
			// A server restarted while this one waited refuses a
			// connection for a moment (QA: the first refusal ended the
			// command, exit 3). Not what a second try brings again.
			waiting && err != nil && c.Context.Err() == nil && !errors.Is(err, control.ErrCredentials) &&
				!errors.Is(err, auth.ErrHostKeyChanged) && !errors.Is(err, auth.ErrHostUnknown)
		if !again || time.Now().Add(wait).After(deadline) {
			return cl, err
		}
		waiting = true
		writeNote(fmt.Sprintf("kerf: %s; trying again in %v\n", printable(err.Error()), wait))
		if enc := jsonOutput(c); enc != nil {
			// A script waits with the command: it hears why, as of a
			// lost connection dialled again (QA: nothing until the
			// error).
			enc.Encode(jsonEvent{Event: "reconnecting", Error: err.Error(), Seconds: wait.Seconds()})
		}
		select {
		case <-time.After(wait):
		case <-c.Context.Done():
			return nil, c.Context.Err()
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// unpinnedOnce says once that a server's key could not be pinned.
var unpinnedOnce sync.Once

// throttleBudget bounds the time a dial waits in all for a server that
// throttles logins from this address: after a failed login there it
// checks one at a time, and the others wait their turn (QA ak: one
// mistyped password, anyone's, and 10 of 12 cron jobs started together
// failed, exit 3, after a single try again).
const throttleBudget = time.Minute

// dialAfterThrottle dials, and again after each wait a kerf server asks
// for when it did not check the login because the address failed one
// before (a password typed again quickly, or others' logins being
// checked in turn), within throttleBudget. A wrong password is said so,
// not throttled, and ends it.
func dialAfterThrottle(ctx context.Context, cfg control.ClientConfig) (*control.Client, error) {
	return dialAfterThrottleWithin(ctx, cfg, throttleBudget, true)
}

// extraSessionBudget bounds what a command's further sessions wait for
// a throttling server: the command goes on with those that logged in
// once this has passed (the first waits throttleBudget).
const extraSessionBudget = 5 * time.Second

// dialAfterThrottleWithin is dialAfterThrottle within budget, saying
// that it waits if note is set.
func dialAfterThrottleWithin(ctx context.Context, cfg control.ClientConfig, budget time.Duration, note bool) (*control.Client, error) {
	deadline := time.Now().Add(budget)
	told := !note
	for {
		cl, err := control.Dial(ctx, cfg)
		if err == nil {
			sessionBegan.Store(true)
		}
		d, ok := throttled(err)
		d = max(d, 100*time.Millisecond) // (a server's "wait 0s" is no cue to hammer it)
		if !ok || time.Now().Add(d).After(deadline) {
			return cl, err
		}
		if !told {
			told = true
			why := "the server throttles logins from this address after a failed one"
			if strings.Contains(err.Error(), "being checked") {
				// No failure: others from here were logging in (review 59c).
				why = "the server is checking other logins from this address"
			}
			fmt.Fprintf(os.Stderr, "kerf: %s: trying again in %v\n", why, d.Round(100*time.Millisecond))
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// password finds the password for user: --password-file, then
// $KERF_PASSWORD (if not empty), then none if there is a client key
// (haveKey: the key logs in), then a prompt on the terminal, which ask
// says is to be made once the server is reached (ClientConfig.AskPassword).
// Anonymous needs none.
func password(c *cli.Context, user, addr string, haveKey bool) (pw string, ask bool, err error) {
	if f := c.String("password-file"); f != "" {
		fh, err := os.Open(f)
		if err != nil {
			return "", false, credentialsErr("--password-file: %v", err)
		}
		defer fh.Close()
		line, err := readLine(fh)
		if errors.Is(err, io.EOF) || err == nil && line == "" {
			// An empty first line would go as an empty password, and
			// fail as a wrong one, counted against this address (QA).
			return "", false, credentialsErr("--password-file %s: its first line, the password, is empty", f)
		}
		if err != nil {
			return "", false, credentialsErr("--password-file: reading %s: %v", f, err)
		}
		return line, false, nil
	}
	if pw := os.Getenv("KERF_PASSWORD"); pw != "" {
		return pw, false, nil
	}
	if auth.IsAnonymous(user) || haveKey {
		return "", false, nil
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return "", false, credentialsErr("no password for %s: use --password-file or KERF_PASSWORD, or log in with a client key (kerf key)", user)
	}
	return "", true, nil
}

// askTrust asks on the terminal whether to pin a server seen for the
// first time.
func askTrust(ctx context.Context, addr, fp string) bool {
	fmt.Fprintf(os.Stderr, "kerf: the server at %s is not known. Its key fingerprint is\n    %s\n"+
		"Compare it with the one `kerf serve` printed. Trust it and remember it? [y/N] ", addr, fp)
	line, err := fromTerminal(ctx, func() (string, error) { return readLine(os.Stdin) })
	if errors.Is(err, errAtPrompt) {
		fmt.Fprintln(os.Stderr) // the message after it on a line of its own
	}
	return strings.EqualFold(strings.TrimSpace(line), "y") || strings.EqualFold(strings.TrimSpace(line), "yes")
}

func kermitConfig(c *cli.Context) *kermit.Config {
	k := kermit.DefaultConfig()
	k.Resume = c.Bool("resume")
	k.ModifyWindow = modifyWindow(c)
	k.Log = clientLogger(c)
	return &k
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run a kerf server (TLS 1.3; users from the state directory)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "root", Value: ".", Usage: "directory served to users whose entry names none, and to anonymous access"},
			&cli.StringFlag{Name: "xferlog", Usage: "append a line per transferred file to FILE, in the standard xferlog format"},
			&cli.StringFlag{Name: "listen", Value: fmt.Sprintf(":%d", control.DefaultPort), Usage: "control address"},
			&cli.StringFlag{Name: "data-listen", Usage: "data address (default: the control host, any port)"},
			&cli.IntFlag{Name: "max-streams", Value: 8, Usage: fmt.Sprintf("data connections per session (1-%d)", datachan.MaxStreams)},
			&cli.IntFlag{Name: "max-block-size", Value: control.DefaultMaxBlockSize, Usage: fmt.Sprintf("the largest data block taken from a client, told to it (1024-%d): a session's memory for what it receives follows it", framing.MaxBlockLen)},
			stateFlag(),
			&cli.StringFlag{Name: "cert", Usage: "PEM certificate chain (default: a self-signed one in the state directory)"},
			&cli.StringFlag{Name: "key", Usage: "PEM private key for --cert"},
			&cli.BoolFlag{Name: "anonymous", Usage: "let clients that do not log in read (only) --root"},
			&cli.BoolFlag{Name: "allow-classic", Usage: "also serve plain Kermit peers (C-Kermit) WITHOUT TLS: their passwords and data cross the network in clear"},
			&cli.BoolFlag{Name: "plain-data", Usage: "allow unencrypted data connections to clients that ask (--plain-data); control stays encrypted"},
			&cli.BoolFlag{Name: "data-from-any-address", Usage: "accept data connections from addresses other than the control connection's"},
			&cli.IntFlag{Name: "max-sessions", Value: 256, Usage: "connections at once (at the limit, one not logged in gives way to a new one)"},
			&cli.IntFlag{Name: "max-sessions-per-addr", Value: 16, Usage: "connections at once from one address (an IPv6 /64)"},
			&cli.DurationFlag{Name: "no-login-penalty", Value: control.DefaultNoLoginPenalty, Usage: "what each connection that ends without logging in costs its address: once they add up to 15s, its new connections are told busy until they run out (at most 10 minutes ahead); loopback addresses are never penalized; 0: no penalty; at most 5s"},
			&cli.DurationFlag{Name: "idle-timeout", Value: 10 * time.Minute, Usage: "drop sessions silent this long"},
			&cli.DurationFlag{Name: "handshake-timeout", Value: 10 * time.Second, Usage: "time from connect to login"},
			&cli.DurationFlag{Name: "take-over-after", Value: control.DefaultTakeOverAfter, Usage: "a client sending a file that another session is receiving takes it over (resuming it with --resume) once that session has moved nothing for this long (a client cut off, whose session the server has not seen end); 0: never, the client is refused \"busy\" until the old session's idle timeout"},
			&cli.DurationFlag{Name: "drain", Usage: "on SIGTERM or SIGINT, take no new sessions and let those under way finish their commands (a transfer, a listing) for up to this long before ending them; a second signal ends them at once (0: end them at once; their clients resume when the server is back)"},
			&cli.BoolFlag{Name: "quic", Usage: "also offer the data channel over QUIC (UDP, at the data address; its port number where free) to clients that ask (--quic)"},
			&cli.BoolFlag{Name: "no-compression", Usage: "refuse clients' --compress (compressing what the server sends costs its CPU); their data then travels as it is"},
			blockSizeFlag, writeBehindFlag, sparseFlag, congestionFlag, limitRateFlag,
			&cli.DurationFlag{Name: "timer-slack", Value: defaultTimerSlack, EnvVars: []string{"KERF_TIMER_SLACK"}, Usage: "how late the server's threads' timers may fire, so that the kernel can group their wake-ups (Linux; at most 100ms; none of kerf's timers needs finer; 0: the system's, 50µs by default): fewer of the Go runtime's watchdog wake-ups, which cost most on virtual machines"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErr("serve takes no arguments")
			}
			if ts := c.Duration("timer-slack"); ts < 0 || ts > maxTimerSlack {
				// Every timer of the server may fire that late: the
				// handshake's and login's bounds, the QUIC fallback's.
				return usageErr("--timer-slack %v: from 0 (the system's) to %v", ts, maxTimerSlack)
			}
			// Flags first, before a key is made or a user file read.
			opts, err := pathOptions(c)
			if err != nil {
				return err
			}
			if err := checkServeLimits(c); err != nil {
				return err
			}
			limit, err := rateLimit(c)
			if err != nil {
				return err
			}
			if fi, err := os.Stat(c.String("root")); err != nil || !fi.IsDir() {
				return usageErr("--root %s is not a directory", c.String("root"))
			}
			if mb := c.Int("max-block-size"); mb < 1024 || mb > framing.MaxBlockLen {
				return usageErr("--max-block-size %d: must be between 1024 and %d", mb, framing.MaxBlockLen)
			}
			if err := checkStreams("max-streams", c.Int("max-streams")); err != nil {
				return err
			}
			// The server's own files must be out of every session's
			// reach: a root holding them gives its users the key, and
			// the users file to rewrite (QA).
			private := []string{c.String("state")}
			if k := c.String("key"); k != "" {
				private = append(private, k)
			}
			if p := control.PrivateWithin(c.String("root"), private); p != "" {
				return usageErr("--root %s holds the server's own %s (its key, its users): serve a directory that does not, or move the state (--state)", c.String("root"), p)
			}
			// Before anything is made or said: this may start kerf again.
			raiseTimerSlack(c.Context, c.Duration("timer-slack"))
			log := logger(c)
			// Checked before a key is made there (QA ak: a fresh key was
			// written into a world-writable directory, then refused);
			// what kerf makes there is its own, 0700 and 0600.
			if err := auth.CheckStateProtected(c.String("state")); err != nil {
				return serveStartErr(err) // (an I/O error may pass: review 56)
			}
			id, err := serverIdentity(c)
			if err != nil {
				return err
			}
			users, err := usersFile(c)
			if err != nil {
				// Refused at the start, as a state that is not protected
				// is (the user commands' exit 4 is for a change refused).
				return serveStartErr(err)
			}
			users.Protected = true // and at every reading from now on
			// A directory too big to sort in memory is sorted in runs
			// on disk: in the state directory, where /tmp may be memory.
			filestore.SpillDir = c.String("state")
			if fi, err := os.Stat(users.Path()); err == nil && fi.Mode().Perm()&0o044 != 0 {
				// Not refused (nothing is given away to those who may read
				// it alone), but its hashes are then open to an offline
				// attack (QA: accepted without a word).
				fmt.Fprintf(os.Stderr, "kerf: WARNING: %s has mode %#o: others may read its password hashes; run chmod go-r %s\n", users.Path(), fi.Mode().Perm(), users.Path())
			}
			list, listErr := users.List()
			if listErr == nil && len(list) == 0 && !c.Bool("anonymous") {
				fmt.Fprintf(os.Stderr, "kerf: no users in %s: add one with `kerf user add NAME --root DIR`, or serve --anonymous (read-only)\n", users.Path())
			}
			var xl *control.XferLog
			if p := c.String("xferlog"); p != "" {
				f, err := openXferlog(p)
				if err != nil {
					return serveStartErr(fmt.Errorf("xferlog: %w", err))
				}
				xl = control.NewXferLog(f)
				r := &xferlogReopener{path: p, log: xl}
				reopenXferlog.Store(r)
				defer r.close()
			}
			srv, err := control.NewServer(control.ServerConfig{
				XferLog: xl, PathOpts: opts, RateLimit: limit,
				Root: c.String("root"), Private: private, Addr: c.String("listen"), DataAddr: c.String("data-listen"),
				MaxStreams: c.Int("max-streams"), MaxBlockSize: c.Int("max-block-size"), Log: log,
				Identity: id, Users: users, Anonymous: c.Bool("anonymous"),
				AllowClassic: c.Bool("allow-classic"), AllowPlainData: c.Bool("plain-data"),
				RefuseCompression: c.Bool("no-compression"), Congestion: c.String("congestion"), QUIC: c.Bool("quic"),
				DataFromAnyAddress: c.Bool("data-from-any-address"),
				MaxSessions:        c.Int("max-sessions"), MaxSessionsPerAddr: c.Int("max-sessions-per-addr"),
				NoLoginPenalty: noLoginPenalty(c.Duration("no-login-penalty")),
				IdleTimeout:    c.Duration("idle-timeout"), HandshakeTimeout: c.Duration("handshake-timeout"), TakeOverAfter: takeOverAfter(c.Duration("take-over-after")),
				Sparse: c.Bool("sparse"),
			})
			if err != nil {
				return connectErr(err)
			}
			fmt.Fprintf(os.Stderr, "kerf: serving %s on %s (data %s), TLS 1.3\nkerf: server key fingerprint %s\n",
				c.String("root"), srv.Addr(), srv.DataAddr(), id.Fingerprint)
			if own := ownRoots(list, c.String("root")); len(own) > 0 {
				// A user's root, from user add --root, is where that
				// user's files go, not --root (QA: nothing said so).
				fmt.Fprintf(os.Stderr, "kerf: users with a root of their own, which --root does not change: %s\n", strings.Join(own, ", "))
			}
			for _, u := range list {
				if u.Root != "" {
					if p := control.PrivateWithin(u.Root, private); p != "" {
						fmt.Fprintf(os.Stderr, "kerf: WARNING: %s cannot log in: its root %s holds the server's own %s (move the state out of it, or give the user another root)\n", printable(u.Name), printable(u.Root), p)
					}
				}
			}
			if q := srv.QUICAddr(); q != nil {
				fmt.Fprintf(os.Stderr, "kerf: QUIC data channel on udp %s\n", q)
			}
			if w := srv.QUICWarning(); w != "" {
				fmt.Fprintf(os.Stderr, "kerf: QUIC: %s\n", w)
			}
			if c.Bool("allow-classic") {
				fmt.Fprintln(os.Stderr, "kerf: WARNING: --allow-classic: plain Kermit clients' passwords and file data cross the network in clear")
			}
			if c.Bool("plain-data") {
				fmt.Fprintln(os.Stderr, "kerf: --plain-data: file data of clients that ask for it is not encrypted")
			}
			if !hasTerminal() || hangupIgnored {
				// A service: SIGHUP is an operator's reload. One in a
				// terminal stops on it, the terminal having closed;
				// one under nohup was told to outlive that, and
				// reloads too (logrotate's SIGHUP reopens its xferlog).
				hangupReloads.Store(true)
				if hangupIgnored {
					catchHangup()
				}
			}
			// Its stderr a pipe whose reader went (a tee, a terminal
			// closed): a log line must not kill the server with SIGPIPE
			// (review); the write fails, and serving goes on.
			signal.Ignore(syscall.SIGPIPE)
			err = srv.Serve(drained(c.Context, srv, c.Duration("drain")))
			hangupReloads.Store(false)
			if err == nil && c.Context.Err() != nil {
				// As its start is said (QA: an idle server stopped
				// without a word).
				why := context.Cause(c.Context).Error()
				if sc := (*signalCause)(nil); errors.As(context.Cause(c.Context), &sc) {
					why = sc.sig.String()
				}
				fmt.Fprintf(os.Stderr, "kerf: stopped (%s)\n", why)
			}
			return err
		},
	}
}

// drained is the context a server serves under with --drain grace: the
// signal that ends ctx starts a drain (control.Server.Drain), and the
// context ends, cutting the sessions left, once grace has passed or
// another signal comes. With no grace it is ctx.
func drained(ctx context.Context, srv *control.Server, grace time.Duration) context.Context {
	if grace <= 0 {
		return ctx
	}
	sctx, cut := context.WithCancelCause(context.WithoutCancel(ctx))
	go func() {
		<-ctx.Done()
		why := context.Cause(ctx)
		if n := srv.Sessions(); n > 0 {
			name := why.Error()
			if sc := (*signalCause)(nil); errors.As(why, &sc) {
				name = sc.sig.String()
			}
			fmt.Fprintf(os.Stderr, "kerf: %s: draining: no new sessions; the %d under way end once their commands are done, within %v (another signal ends them now)\n", name, n, grace)
		}
		srv.Drain()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-laterSignal:
		}
		cut(why)
	}()
	return sctx
}

// serveHangup is a running server's SIGHUP: kept serving, as daemons
// reload on it (QA: an operator's HUP "to reload the users" stopped the
// server and cut every transfer). There is nothing to load again: the
// users file is read at every login, and clients pin the key, not the
// certificate.
func serveHangup() {
	if r := reopenXferlog.Load(); r != nil {
		if err := r.reopen(); err != nil {
			fmt.Fprintf(os.Stderr, "kerf: SIGHUP: still serving; reopening the xferlog %s: %v (its lines go to the file open before)\n", r.path, err)
			return
		}
		fmt.Fprintf(os.Stderr, "kerf: SIGHUP: still serving; the xferlog %s reopened (the users file is read at every login); SIGTERM or SIGINT stops the server\n", r.path)
		return
	}
	fmt.Fprintln(os.Stderr, "kerf: SIGHUP: still serving; nothing to reload (the users file is read at every login); SIGTERM or SIGINT stops the server")
}

// reopenXferlog is the running server's --xferlog, which a SIGHUP opens
// again by its name: a log rotated (renamed, as logrotate does) was
// written on under its old name, for ever (QA ai).
var reopenXferlog atomic.Pointer[xferlogReopener]

type xferlogReopener struct {
	path string
	log  *control.XferLog

	mu     sync.Mutex
	closed bool // the server has stopped: no more opening
}

func (r *xferlogReopener) reopen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("the server has stopped")
	}
	f, err := openXferlog(r.path)
	if err != nil {
		return err
	}
	return r.log.Swap(f).(io.Closer).Close()
}

// close ends the log at the server's stop: a SIGHUP racing it opens
// nothing more (review 55: it panicked on the closed log's stand-in).
func (r *xferlogReopener) close() {
	reopenXferlog.CompareAndSwap(r, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.log.Swap(io.Discard).(io.Closer).Close()
}

func openXferlog(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}

// hasTerminal reports whether this process has a controlling terminal,
// whose closing sends SIGHUP.
func hasTerminal() bool {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// serveStartErr is the exit error of a server that could not start: 3,
// as an address in use is, when what stopped it may pass (its state
// directory's file system full, over quota or failing, no file or
// memory left), so that a service manager told not to restart on 2
// tries again; 2 otherwise, its configuration being at fault (a users
// file it cannot read, a key it cannot parse). QA aj: a full state
// directory exited 2, as a command mistyped.
func serveStartErr(err error) error {
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return connectErr(err)
		}
	}
	return usageErr("%v", err)
}

// serverIdentity loads --cert/--key, or the state directory's key and
// self-signed certificate, creating them on first start.
func serverIdentity(c *cli.Context) (*auth.Identity, error) {
	cert, key := c.String("cert"), c.String("key")
	if (cert == "") != (key == "") {
		return nil, usageErr("--cert and --key go together")
	}
	if cert != "" {
		id, err := auth.LoadIdentity(cert, key)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return id, nil
	}
	id, created, err := auth.LoadOrCreateIdentity(c.String("state"))
	if err != nil {
		return nil, serveStartErr(err)
	}
	if created {
		fmt.Fprintf(os.Stderr, "kerf: created a server key and self-signed certificate in %s\n", c.String("state"))
	}
	return id, nil
}

// noteRefused says on stderr when --compress or --quic was asked for
// but the server did not agree: it refuses compression
// (--no-compression), does not listen for QUIC (no --quic), or is an
// older kerf. Not an error: the files arrived, the other way.
func noteRefused(c *cli.Context, clients []*control.Client) {
	cl := clients[0]
	for _, o := range clients {
		// The session that fell back from QUIC, if one did: said once.
		if o.QUICFallback() != nil {
			cl = o
			break
		}
	}
	if c.Bool("compress") && cl.Dual() && !cl.DataCompressed() {
		fmt.Fprintln(os.Stderr, "kerf: the server did not agree to --compress (it refuses it, or is an older kerf): the data went uncompressed")
	}
	switch {
	case !c.Bool("quic") || !cl.Dual() || cl.DataOverQUIC():
	case cl.QUICFallback() != nil:
		fmt.Fprintf(os.Stderr, "kerf: QUIC could not be used (%v): the data went over TLS on TCP\n", cl.QUICFallback())
	default:
		fmt.Fprintln(os.Stderr, "kerf: the server does not offer QUIC (kerf serve --quic): the data went over TCP")
	}
	if c.Bool("plain-data") && !c.Bool("quic") && cl.Dual() && cl.DataEncrypted() {
		fmt.Fprintln(os.Stderr, "kerf: the server does not allow --plain-data (kerf serve --plain-data): the data went over TLS")
	}
	if c.IsSet("congestion") && cl.Dual() && cl.DataOverQUIC() {
		// (QA y F6: left without a word; the get's refusal is said.)
		fmt.Fprintln(os.Stderr, "kerf: --congestion is for TCP data connections: the data went over QUIC, with quic-go's own")
	}
}

// takeOverAfter maps --take-over-after to ServerConfig.TakeOverAfter,
// where 0 is the default and never is negative (checkServeLimits
// refuses a negative flag).
// noLoginPenalty is --no-login-penalty as ServerConfig takes it (0: none,
// which the config says negative).
func noLoginPenalty(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func takeOverAfter(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// checkServeLimits refuses limits of zero or less, which would
// otherwise turn silently into the defaults: --idle-timeout 0 meaning
// "never" to one reader and "ten minutes" to the server.
func checkServeLimits(c *cli.Context) error {
	for _, name := range []string{"idle-timeout", "handshake-timeout"} {
		if c.Duration(name) <= 0 {
			return usageErr("--%s must be more than 0 (%v given)", name, c.Duration(name))
		}
	}
	if d := c.Duration("take-over-after"); d < 0 {
		return usageErr("--take-over-after must be 0 (never) or more (%v given)", d)
	}
	if d := c.Duration("drain"); d < 0 {
		return usageErr("--drain must be 0 (none) or more (%v given)", d)
	}
	// Past a third of the block, three mistakes (a wrong password, a
	// changed host key) would shut an address out (QA x: at 1h, one).
	if d, most := c.Duration("no-login-penalty"), control.PenaltyBlock/3; d < 0 || d > most {
		return usageErr("--no-login-penalty must be 0 (none) to %v: at %v a block begins after %d connections that did not log in (%v given)", most, most, int(control.PenaltyBlock/most), d)
	}
	for _, name := range []string{"max-sessions", "max-sessions-per-addr"} {
		if c.Int(name) < 1 {
			return usageErr("--%s must be at least 1 (%d given)", name, c.Int(name))
		}
	}
	for _, name := range []string{"listen", "data-listen"} {
		if a := c.String(name); (a != "" || name == "listen") && checkListenAddr(a) != nil {
			return usageErr("--%s %q: %v", name, a, checkListenAddr(a))
		}
	}
	return nil
}

// checkListenAddr refuses an address that is no address to listen on
// (QA ag L14: "--listen bogus" exited 3, "could not connect"); one that
// cannot be listened on (a port in use) is left to the listen, exit 3.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT, :PORT or [IPV6]:PORT")
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("bad port %q: want 0-65535", port)
	}
	return nil
}

func sendCommand() *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "send files to a kerf or Kermit server",
		ArgsUsage: "LOCAL... [USER@]HOST[:PORT][/REMOTE/DIR] (one file: or /REMOTE/NAME; - sends standard input as /REMOTE/NAME; with --files-from LIST: [DIR] HOST[:PORT][/REMOTE/DIR])",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "resume", Usage: "continue interrupted transfers"},
			modifyWindowFlag(),
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "copy directory trees"},
			excludeFlag,
			excludeFromFlag,
			filesFromFlag,
			from0Flag,
			removeSourceFlag,
			sendSessionsFlag,
			reconnectFlag,
		}, clientFlags...),
		Action: jsonErrors(againAfterSetupLoss(func(c *cli.Context) error {
			listing := c.IsSet(filesFromFlag.Name)
			if c.NArg() < 2 && !(listing && c.NArg() == 1) {
				return usageErr("usage: kerf send LOCAL... HOST[:PORT][/REMOTE/DIR] (or --files-from LIST [DIR] HOST[:PORT][/REMOTE/DIR])")
			}
			args := c.Args().Slice()
			addr, rdir, err := parseTarget(args[len(args)-1])
			if err != nil {
				return err
			}
			// A name, never a pattern: its escapes and quotes are
			// taken out as every remote path's are (QA r: 'host/a\ b'
			// went as "a\ b").
			rdir = unescapeName(quotedElements(rdir))
			if err := checkModifyWindow(c); err != nil {
				return err
			}
			if err := checkSessions(c); err != nil {
				return err
			}
			src, none, err := sendSourcesOf(c, args[:len(args)-1])
			switch {
			case err != nil:
				return err
			case none:
				return newSendReporter(c, 0).end(nil, false)
			case !listing && slices.Contains(src.paths, "-"),
				!listing && len(src.paths) == 1 && streamed(src.paths[0]) != "":
				return sendStdin(c, src.paths, addr, rdir)
			}
			ex, _, err := exclusions(c, true)
			if err != nil {
				return err
			}
			if !anyExists(src.paths) {
				// Nothing to send: said before any dial, not after a
				// server that does not answer is waited out (QA: 15 s,
				// then "stat nonexist").
				if _, err := listSources(src, c.Bool("recursive"), ex, true); err != nil {
					return err
				}
			}
			// Walk the local files while connecting and logging in: for
			// a large tree each takes a few milliseconds. Their sizes are
			// needed first only for a progress bar's total and a resume's
			// comparison with the server's listing; else each file's
			// open finds them.
			type walked struct {
				list *localList
				err  error
			}
			walk := make(chan walked, 1)
			go func() {
				l, err := listSources(src, c.Bool("recursive"), ex, c.Bool("resume") || showsBar(c))
				walk <- walked{l, err}
			}()
			cl, cfg, dialErr := dialConfig(c, addr)
			w := <-walk
			if w.err != nil {
				if cl != nil {
					cl.Close()
				}
				return w.err // a bad local path is the first thing to report
			}
			if dialErr != nil {
				return dialErr
			}
			defer cl.Close()
			local := w.list
			rep := newSendReporter(c, local.bytes)
			if rep.remover != nil {
				rep.remover.local = cl.OnThisHost()
			}
			rep.skippedLocal(local.skipped)
			cl.Session().SetEvents(rep.event)
			rep.channel = cl.DataChannel
			cwd := "" // the remote directory the session went into
			// A destination the server would not enter, taken as a
			// file's name: said if the file then fails, since C-Kermit
			// refuses an existing directory it may not enter in the same
			// words as a missing one (review).
			var asFileOf string
			var cdErr error
			if cfg.Classic && isRemoteDir(rdir) {
				defer classicDirBack(c.Context, cl)()
			}
			if len(args) == 2 && !listing && !c.Bool("recursive") && oneFile(local.files) && remoteAsName(rdir) {
				// One file to a name: into it if it is a directory,
				// else stored as that name (asname.go).
				if _, err := cl.Generic(c.Context, 'C', rdir); err != nil {
					if !notADirectory(err) {
						return transferErr(fmt.Errorf("destination %s: %w", rdir, err))
					}
					asFileOf, cdErr = rdir, err
					var base string
					rdir, base = path.Dir(rdir), path.Base(rdir)
					local.files[0].Name = base
				} else {
					cwd, rdir = rdir, ""
				}
			}
			if isRemoteDir(rdir) {
				if err := makeAndEnter(c.Context, cl, rdir, cfg.Classic); err != nil {
					return err
				}
				cwd = rdir
			}
			if c.Bool(removeSourceFlag.Name) && (asFileOf == "" || local.files[0].Name == filepath.Base(args[0])) {
				// Before anything is sent, or found there whole by a
				// resume's listing and removed (ontoitself.go). (A file
				// sent under another name is a rename, even there.)
				pairs := sendProbePairs(args[:len(args)-1], c.Bool("recursive"))
				if listing {
					pairs = listProbePairs(src)
				}
				if err := refuseMoveOntoItself(c.Context, cl, pairs); err != nil {
					return err
				}
			}
			local.ctx = c.Context
			var list kermit.FileList
			regular := local.regular
			toSend := local.files // (nil: not kept)
			if !c.Bool("resume") || cfg.Classic {
				list = local.list(rep.listed)
			} else {
				// What the server has whole is found in one listing, not
				// file by file (Session.SkipWhole): a rerun of a
				// tree sends only what is missing, and opens sessions
				// for that alone. (The listing is held then, as the
				// server's is.)
				partial := func(name string) string {
					dir, base := path.Split(name)
					return dir + filestore.TempName(base)
				}
				files := local.all()
				for _, f := range files {
					rep.listed(f)
				}
				if files, err = cl.Session().SkipWhole(c.Context, files, partial); err != nil {
					return rep.end(err, false)
				}
				list, regular, toSend = kermit.ListOf(files), regularFiles(files), files
			}
			clients := []*control.Client{cl}
			// More sessions only to a kerf server (a C-Kermit server
			// takes one connection at a time), and only for enough files
			// to repay a login each.
			want := min(sessionsFor(c, cl), regular/minFilesPerSession)
			if !c.IsSet("sessions") {
				want = worthSessions(want, regular, func() int64 { return sizeOf(toSend) })
			}
			if want := sessionsWithin(want); want > 1 && !cfg.Classic {
				more, err := moreSessions(c.Context, cfg, cl, want-1, cwd)
				for _, m := range more {
					defer m.Close()
					m.Session().SetEvents(rep.event)
				}
				if err != nil {
					noteFewerSessions(c, 1+len(more), want, err)
				}
				clients = append(clients, more...)
			}
			var gone []*control.Client // replaced by successors
			rep.wire = wireBytes(&clients, &gone, func(st datachan.Stats) int64 { return st.BytesSent })
			defer closeSuccessors(&clients, &gone, slices.Clone(clients))
			// The first session's successor's, if it was lost: a resume
			// that fell back from QUIC to TCP carried the data over TCP
			// (QA ab: done said "quic").
			rep.channel = func() string { return clients[0].DataChannel() }
			reconnect := successors(c, cfg, cl, cwd, rep.event, &clients, &gone)
			sendErr := kermit.SendParallelWith(c.Context, sessionsOf(clients), list, kermit.SendOptions{Reconnect: reconnect})
			rep.notWalked(local.notWalked())
			noteRefused(c, clients)
			if sendErr != nil && cdErr != nil && !cl.Session().PeerIsKerf() && !kermit.AtSendInit(sendErr) && (rep.byReceiver() || kermit.FromReceiver(sendErr)) {
				// Only when the receiver turned the file down: a file
				// that changed, or a Ctrl-C, has nothing to do with the
				// name it went under (QA: said on every failure). And
				// only for a classic server, whose refusal to enter a
				// directory may mean one it may not enter: a kerf
				// server's said there was none (QA: the note beside a
				// refusal for room). Nor when the server would not
				// receive at all: no file was sent (QA: DISABLE SEND).
				fmt.Fprintf(os.Stderr, "kerf: note: the server would not change into %s (%s), so the file was sent as a file of that name\n", printable(asFileOf), printable(cdErr.Error()))
			}
			return rep.end(sendErr, false)
		})),
	}
}

// isRemoteDir reports whether a send's remote path names a directory
// to go into, not the session's own (none, "/" or ".").
func isRemoteDir(rdir string) bool { return rdir != "" && rdir != "/" && rdir != "." }

// classicDirBack notes a classic server's directory and returns what
// takes the session back there: a classic server (C-Kermit) keeps its
// directory from one client to the next, and the next command's paths
// expect the one it had.
func classicDirBack(ctx context.Context, cl remoteCommander) func() {
	pwd, err := cl.Generic(ctx, 'A')
	back := strings.TrimSpace(pwd)
	if err != nil || back == "" {
		return func() {}
	}
	return func() {
		if ctx.Err() == nil {
			cl.Generic(ctx, 'C', back)
		}
	}
}

// makeAndEnter makes the remote directory dir (with its parents) and
// changes the session into it. A classic server is asked to change into
// it first, and to make it only if it will not: C-Kermit servers are
// often run with DISABLE MKDIR, which refused every send into a
// directory there, existing or not (QA; C-Kermit's own client does
// REMOTE CD, then SEND). A kerf server makes what is there already
// without a word, so it is asked to make it first: one round trip fewer
// for a new directory.
func makeAndEnter(ctx context.Context, cl *control.Client, dir string, classic bool) error {
	if classic {
		if _, err := cl.Generic(ctx, 'C', dir); err == nil {
			return nil
		}
	}
	if _, err := cl.Generic(ctx, 'm', dir); err != nil {
		return setupLoss(transferErr(fmt.Errorf("destination %s: making it: %w", dir, err)))
	}
	if _, err := cl.Generic(ctx, 'C', dir); err != nil {
		return setupLoss(transferErr(fmt.Errorf("destination %s: %w", dir, err)))
	}
	return nil
}

func getCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "fetch files from a kerf or Kermit server",
		ArgsUsage: "[USER@]HOST[:PORT]/REMOTE/PATH... LOCAL/DIR (one file: or LOCAL/NAME)",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "resume", Usage: "continue interrupted transfers"},
			modifyWindowFlag(),
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "copy directory trees"},
			getExcludeFlag,
			excludeFromFlag,
			sparseFlag,
			getRemoveSourceFlag,
			getSessionsFlag,
			reconnectFlag,
		}, clientFlags...),
		Action: jsonErrors(func(c *cli.Context) (err error) {
			if c.NArg() < 2 {
				return usageErr("usage: kerf get HOST[:PORT]/REMOTE/PATH... LOCAL/DIR")
			}
			args := c.Args().Slice()
			var addr string
			var specs []string
			for _, a := range args[:len(args)-1] {
				ad, rp, err := parseTarget(a)
				if err != nil {
					return err
				}
				rp = quotedElements(rp)
				if addr != "" && ad != addr {
					return usageErr("all remote paths must be on one host")
				}
				if rp == "" || rp == "/" {
					if !c.Bool("recursive") {
						return usageErr("%s names no remote file (the whole tree needs -r)", a)
					}
					rp = "." // get -r host/ dest: the whole tree
				}
				if c.Bool("classic") {
					if err := classicDirPattern(rp, a); err != nil {
						return err
					}
				}
				addr = ad
				if !slices.Contains(specs, rp) {
					// Named twice, asked once: a classic server sends
					// it twice, and the second was refused as a second
					// file of that name (QA).
					specs = append(specs, rp)
				}
			}
			dest := args[len(args)-1]
			openDir, asName, renamed := localAsName(specs, dest, c.Bool("recursive"))
			toStdout := isStdout(dest)
			if toStdout {
				switch {
				case !renamed:
					return usageErr("%v", errStdoutUsage)
				case c.Bool("resume"):
					return usageErr("--resume: standard output keeps nothing to resume")
				case c.Bool("json"):
					return &notJSONError{usageErr("--json writes its events to standard output, where the file would go")}
				case c.Bool("sparse"):
					return usageErr("--sparse: standard output has no holes")
				case c.Bool(removeSourceFlag.Name):
					return usageErr("--remove-source-files: standard output keeps nothing (a pipe's reader may yet fail)")
				}
				// Nothing is stored: the store is only what the
				// session's other calls go to.
				openDir = os.TempDir()
			} else if !renamed {
				if isNullDevice(dest) {
					// Checked here, not found out after the connection
					// when the directory cannot be made (exit 4, QA).
					return usageErr("%s takes one file (fetched, checked and not stored); -r, several files or a wildcard need a directory", dest)
				}
				openDir = dest
			} else if isNullDevice(dest) && c.Bool(removeSourceFlag.Name) {
				// The server's only copy was removed for a file kept
				// nowhere (QA u).
				return usageErr("--remove-source-files: %s keeps nothing", dest)
			}
			made := missingDirs(openDir)
			store, err := filestore.Open(openDir)
			if err != nil {
				// Not a usage error: the command was right, the local
				// side cannot take the files (read-only, no permission,
				// a file in the way).
				return transferErr(fmt.Errorf("destination %s: %w", dest, err))
			}
			store.ModifyWindow = modifyWindow(c)
			// Made for this get: a get that fails leaves no empty
			// directory behind (os.Remove takes only an empty one),
			// the innermost first.
			defer func() {
				for i := 0; err != nil && i < len(made); i++ {
					os.Remove(made[i])
				}
			}()
			defer store.Close()
			store.Sparse = c.Bool("sparse")
			store.UnnamedMax = filestore.NetUnnamedMax
			// Without -r files land by their own names, as with cp: a
			// classic server that sends paths (C-Kermit's SET SEND
			// PATHNAMES) builds no tree here (a kerf server sends bare
			// names then). Not with --resume: a REGET of a kerf server
			// recurses, as it always has.
			store.Flat = !c.Bool("recursive") && !c.Bool("resume")
			// Two filespecs may name files of one name (a/x b/x), and so
			// may one whose paths are cut to their names: the second is
			// refused, not stored over the first.
			severalSpecs := len(specs) > 1
			store.UniqueNames = severalSpecs || store.Flat
			if err := checkModifyWindow(c); err != nil {
				return err
			}
			if err := checkSessions(c); err != nil {
				return err
			}
			ex, pats, err := exclusions(c, false)
			if err != nil {
				return err
			}
			cl, cfg, err := dialConfig(c, addr)
			if err != nil {
				return err
			}
			defer cl.Close()
			rep := newReporter(c, nil)
			rep.expectNames(specs)
			// One file asked for by its name: the bar's total is its
			// size, once its A tells it (QA y: a spinner, no percentage
			// or time left, for a long fetch of one file).
			rep.oneFile = len(specs) == 1 && !hasWildcard(specs[0]) && !c.Bool("recursive")
			cl.Session().SetEvents(rep.event)
			rep.channel = cl.DataChannel
			opts := kermit.GetOptions{Recursive: c.Bool("recursive"), Resume: c.Bool("resume"), Exclude: pats, RemoveSource: c.Bool(removeSourceFlag.Name)}
			if opts.RemoveSource && !cfg.Classic && (!renamed || asName == unescapeName(path.Base(path.Clean(specs[0])))) {
				// (A classic server refuses the removal anyway; a file
				// stored under another name is a rename, even there.)
				if err := refuseMoveOntoItself(c.Context, cl, getProbePairs(specs, openDir)); err != nil {
					return err
				}
			}
			if !cfg.Classic && !cfg.QUIC {
				// The server sends: its congestion control is what counts.
				opts.Congestion = c.String("congestion")
			}
			toFetch := -1 // files the GET will bring, where a listing told
			if opts.Resume && !opts.RemoveSource && !cfg.Classic && !renamed && !severalSpecs && hasEntries(openDir) {
				// (Not when the server removes what this side has: the
				// files found here whole must come up in the GET, each
				// refused at its A, for the server to remove them.)
				// What is here whole is found from one listing of the
				// GET's files and left out by the server
				// (kermit.GetOptions.Skip), not sent to be thrown away.
				// Each entry is looked at as it comes: only those whole
				// here are kept, not the listing.
				listed := 0
				err := cl.Session().GetListingEach(c.Context, quoteSpec(specs), true, func(e framing.ListingEntry) error {
					if ex.Excludes(e.Name, false) {
						return nil
					}
					listed++
					if store.HasWhole(e) {
						opts.Skip = append(opts.Skip, e)
					}
					return nil
				})
				var le *kermit.LinkError
				if errors.As(err, &le) || c.Context.Err() != nil {
					return rep.end(err, true)
				}
				if err == nil {
					toFetch = listed - len(opts.Skip)
				} else {
					opts.Skip = nil // (as before: a listing that failed part-way told nothing)
				}
			}
			// Only what was asked for is stored (a file under a name
			// of the user's takes whatever name comes: asNameStore).
			if !renamed {
				store.Expect = expectNames(specs, opts.Recursive || opts.Resume, cfg.Classic)
			}
			clients := []*control.Client{cl}
			stores := []kermit.Store{store}
			var expectOne func(string) error
			if renamed && hasEscape(specs[0]) {
				// Its wildcards made literal: that file and no other
				// (a server falls back to the pattern when none is so
				// named).
				expectOne = expectNames(specs, false, cfg.Classic)
			}
			if !toStdout && !isNullDevice(dest) {
				rep.localDir = openDir
			}
			if toStdout {
				stores[0] = &stdoutStore{sink: newPipeSink(os.Stdout, os.TempDir()), expect: expectOne}
				rep.toStdout = true
			} else if renamed {
				stores[0] = &asNameStore{Dir: store, as: asName, discard: isNullDevice(dest), expect: expectOne}
				rep.discarding = isNullDevice(dest)
			} else if want := sessionsWithin(fetchSessions(sessionsFor(c, cl), toFetch)); want > 1 && !cfg.Classic && (opts.Recursive || c.IsSet("sessions")) {
				// A tree (or many files asked for so): shares of it
				// over more sessions, each into its own store.
				more, err := moreSessions(c.Context, cfg, cl, want-1, "")
				for _, m := range more {
					defer m.Close()
					st, err := filestore.Open(openDir)
					if err != nil {
						return transferErr(fmt.Errorf("destination %s: %w", dest, err))
					}
					defer st.Close()
					st.Sparse, st.UniqueNames, st.Flat, st.UnnamedMax, st.Expect, st.ModifyWindow = store.Sparse, store.UniqueNames, store.Flat, store.UnnamedMax, store.Expect, store.ModifyWindow
					// Two names of one form, fetched by two sessions, are
					// still one entry where the directory folds case.
					if store.Folds == nil {
						store.Folds = &filestore.FoldSet{}
					}
					st.Folds = store.Folds
					if store.UniqueNames {
						// One transfer: a name taken in one session is
						// taken for all.
						if store.Names == nil {
							store.Names = &filestore.NameSet{}
						}
						st.Names = store.Names
					}
					m.Session().SetEvents(rep.event)
					clients, stores = append(clients, m), append(stores, st)
				}
				if err != nil {
					noteFewerSessions(c, 1+len(more), want, err)
				}
			}
			var gone []*control.Client // replaced by successors
			rep.wire = wireBytes(&clients, &gone, func(st datachan.Stats) int64 { return st.WireBytesReceived })
			defer closeSuccessors(&clients, &gone, slices.Clone(clients))
			// The first session's successor's, if it was lost: a resume
			// that fell back from QUIC to TCP carried the data over TCP
			// (QA ab: done said "quic").
			rep.channel = func() string { return clients[0].DataChannel() }
			opts.Reconnect = successors(c, cfg, cl, "", rep.event, &clients, &gone)
			get := func(spec string) error {
				return kermit.GetParallel(c.Context, sessionsOf(clients), spec, opts, stores)
			}
			err = getEach(specGroups(specs, cfg.Classic), func(spec string) error {
				return classicTreeAgain(c.Context, cl, cl.Session(), opts.Recursive, specs, spec, get(spec), get)
			}, rep.refusedSpec)
			// The server is kerf if any session found it so: the first
			// one, lost and followed by a successor, may have agreed
			// nothing (QA af: the classic server's note after a get -r
			// from kerf that reconnected).
			kerfPeer := cl.Session().PeerIsKerf()
			for _, m := range clients {
				kerfPeer = kerfPeer || m.Session().PeerIsKerf()
			}
			if err == nil && !renamed && !kerfPeer {
				// A kerf server names what it has not; a classic one
				// is silent.
				rep.missingNames()
			}
			err = classicTreeHint(c, err, kerfPeer, opts.Recursive, specs)
			noteRefused(c, clients)
			noteModesNotKept(stores...)
			return rep.end(err, true)
		}),
	}
}

// remoteCommander sends REMOTE (generic) commands: a network client or
// a serial session.
type remoteCommander interface {
	Generic(ctx context.Context, cmd byte, args ...string) (string, error)
}

// classicTreeAgain is a get -r's answer to err, what getting spec (one
// of specs) from sess came to. C-Kermit's server answers GET /RECURSIVE
// of a directory's name with "File is not readable", and sends its tree
// when asked for DIR/* (the files under their paths from its directory,
// as a kerf server sends them): one plain name alone is asked again so
// (QA: get -r of the README's form failed; QA r: serial get had no -r).
// A file it may not read keeps its own answer.
func classicTreeAgain(ctx context.Context, g remoteCommander, sess *kermit.Session, recursive bool, specs []string, spec string, err error, get func(string) error) error {
	var pe *kermit.PeerError
	if errors.As(err, &pe) && recursive && !sess.PeerIsKerf() && len(specs) == 1 && isPlainName(spec) {
		again := classicTree(ctx, g, spec, get)
		if !errors.As(again, &pe) {
			return again
		}
		// Both refused: said, the second too (the review: only "File
		// is not readable" was left).
		return fmt.Errorf("%w (asked again for %s/*, as a classic Kermit server sends a directory's tree: %v)", err, strings.TrimSuffix(spec, "/"), pe.Msg)
	}
	return err
}

// classicTreeHint adds to a get -r's error from a classic server, of
// several names none a wildcard, how it would send their trees (one
// name alone is asked again as DIR/*: classicTreeAgain).
func classicTreeHint(c *cli.Context, err error, kerfPeer bool, recursive bool, specs []string) error {
	if err == nil && recursive && !kerfPeer {
		// Not silent about what such a tree lacks (QA s: a backup by
		// get -r from C-Kermit came without them, exit 0).
		clientLogger(c).Warn("a classic Kermit server sends no empty directories, and C-Kermit no dot files unless it is set so (SET MATCH DOTFILE ON)")
	}
	var pe *kermit.PeerError
	if errors.As(err, &pe) && recursive && !kerfPeer && len(specs) > 1 && !slices.ContainsFunc(specs, func(s string) bool { return strings.ContainsAny(s, "*?") }) {
		return fmt.Errorf("%w (a classic Kermit server sends a directory's tree when asked for DIR/*; the files then come under the path they have from the server's directory)", err)
	}
	return err
}

// classicTree gets the tree of the directory dir from a classic server
// as DIR/*, from inside dir's parent (REMOTE CD there and back), so that
// its files come under dir's last element, as a kerf server sends them
// (get -r host/a/b . makes ./b); if the server will not change into the
// parent, they come under the path dir gives.
func classicTree(ctx context.Context, cl remoteCommander, dir string, get func(spec string) error) error {
	parent, base := path.Split(dir)
	if parent == "" {
		return get(path.Join(dir, "*"))
	}
	back := classicDirBack(ctx, cl)
	if _, err := cl.Generic(ctx, 'C', parent); err != nil {
		return get(path.Join(dir, "*"))
	}
	defer back()
	return get(path.Join(base, "*"))
}

// isPlainName reports whether spec, as sent to a server, is one name
// that DIR/* can be made of: no wildcard, no list, no space.
func isPlainName(spec string) bool {
	return spec != "" && !hasWildcard(path.Base(spec)) && !strings.ContainsAny(spec, " \t{}")
}

// fetchSessions is how many of want sessions a get opens for toFetch
// files (-1: not known): as for send, one per minFilesPerSession.
func fetchSessions(want, toFetch int) int {
	if toFetch < 0 {
		return want
	}
	return max(1, min(want, toFetch/minFilesPerSession))
}

// hasEntries reports whether dir is a directory with something in it.
func hasEntries(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// missingDirs lists dir and those of its parents that do not exist,
// innermost first: what making dir will create.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		out = append(out, d)
		if filepath.Dir(d) == d {
			return out
		}
	}
}

// anyExists reports whether any of the local paths is there (a link to
// nothing counts: the walk says what it is).
func anyExists(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
	}
	return false
}

// specGroups is how the names of a get go to a server: all in one GET,
// or a GET each where one name cannot be quoted among others
// (framing.JoinSpec: "a} {b"; a server takes it whole when alone) or, to
// a classic Kermit, where one of several has a space: C-Kermit's server
// takes a braced name alone, not among others (it sent the others and
// said nothing of it).
//
// Names that would not fit one packet together go in several GETs of at
// most specBudget bytes each (QA: a get of 1,000 names failed, and dialled
// again and again): a Kermit packet holds about 9,000, and quoting may
// double a name's bytes.
func specGroups(names []string, classic bool) []string {
	wild := func(n string) int {
		if hasWildcard(path.Base(n)) {
			return 1
		}
		return 0
	}
	wilds := make([]int, len(names))
	for i, n := range names {
		wilds[i] = wild(n)
	}
	// The server is sent names without this side's escapes.
	names = unescapeNames(names)
	spec, ok := framing.JoinSpec(names)
	spaced := classic && slices.ContainsFunc(names, func(n string) bool { return strings.ContainsAny(n, " \t") })
	wildcards := 0
	for _, w := range wilds {
		wildcards += w
	}
	if len(names) < 2 || ok && !spaced && len(spec) <= specBudget && wildcards <= specWildcards {
		return []string{spec}
	}
	if ok && !spaced {
		var groups []string
		for start := 0; start < len(names); {
			end, w := start+1, wilds[start]
			for end < len(names) {
				if s, _ := framing.JoinSpec(names[start : end+1]); len(s) > specBudget || w+wilds[end] > specWildcards {
					break
				}
				w += wilds[end]
				end++
			}
			g, _ := framing.JoinSpec(names[start:end])
			groups = append(groups, g)
			start = end
		}
		return groups
	}
	groups := make([]string, len(names))
	for i, n := range names {
		groups[i], _ = framing.JoinSpec([]string{n})
	}
	return groups
}

// specBudget is the most bytes of names one GET carries (specGroups).
const specBudget = 4000

// specWildcards is the most names with wildcard characters one GET
// carries: a kerf server takes 256 (filestore's maxSpecWildcards), and
// counts a name such as "t[1]" that exists literally too (QA: 300 of
// them in one GET failed it whole).
const specWildcards = 200

// getEach runs get on each group of specGroups, going on past files that
// failed and stopping at the first error that ended a transfer. With
// several groups, a server's refusal of one (E: no such file) fails that
// name only, told to refused, and the next goes on.
func getEach(groups []string, get func(spec string) error, refused func(spec string, err error)) error {
	var failed []string
	for _, g := range groups {
		err := get(g)
		var ge *kermit.GroupError
		var pe *kermit.PeerError
		switch {
		case err == nil:
		case errors.As(err, &ge):
			failed = append(failed, ge.Failed...)
		case len(groups) > 1 && (errors.As(err, &pe) || errors.Is(err, kermit.ErrFieldTooLong)):
			refused(g, err)
		default:
			return err
		}
	}
	if len(failed) > 0 {
		return &kermit.GroupError{Failed: failed}
	}
	return nil
}

// quoteSpec joins GET names into one Kermit filespec (framing.JoinSpec),
// without this side's escapes.
func quoteSpec(names []string) string {
	spec, _ := framing.JoinSpec(unescapeNames(names))
	return spec
}

// unescapeNames is names, each without its escapes (escape.go).
func unescapeNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = unescapeName(n)
	}
	return out
}

func remoteCommand(name, usage string, cmd byte) *cli.Command {
	flags := remoteFlags
	if cmd == 'D' {
		flags = append([]cli.Flag{&cli.BoolFlag{Name: "recursive", Aliases: []string{"R"},
			Usage: "list the whole tree (a kerf server): every entry under its path"}}, remoteFlags...)
	}
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "[USER@]HOST[:PORT]/PATH...",
		Flags:     flags,
		Action: jsonErrors(func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usageErr("usage: kerf %s HOST[:PORT]/PATH...", name)
			}
			// The whole command line is checked before anything is done.
			var host string
			var paths []string
			for _, a := range c.Args().Slice() {
				addr, rp, err := parseTarget(a)
				if err != nil {
					return err
				}
				rp = quotedElements(rp)
				if host == "" {
					host = addr
				} else if addr != host {
					return usageErr("all paths must be on one host")
				}
				if rp == "" && cmd != 'D' {
					return usageErr("%s names no remote path", a)
				}
				if _, _, err := remoteName(rp); err != nil {
					return err
				}
				paths = append(paths, rp)
			}
			cl, err := dial(c, host)
			if err != nil {
				return err
			}
			defer cl.Close()
			// Like rm and mkdir, each path is tried, and those that
			// failed are named; a failure of the link ends it all.
			var failed []string
			unread := 0 // directories ls -R could not list
			for i, rp := range paths {
				var reply string
				var out *listingOut
				if cmd == 'D' {
					out = newListingOut(c, rp, len(paths) > 1, i > 0)
				}
				// (err: the previous path's, cleared; rp: checked above)
				err = nil
				arg, literal, _ := remoteName(rp)
				switch {
				case literal && (cmd == 'E' || cmd == 'D'):
					// Taken as it is, or not at all: absent, it
					// would be matched as a pattern (QA: rm of
					// 'data\[2024\].tar' deleted data0.tar, data2.tar
					// and data4.tar).
					err = literally(c.Context, cl)
				case cmd == 'D':
					arg = quoteSpec([]string{arg}) // a pattern with a space is one
				}
				switch {
				case err != nil:
				case cmd == 'D' && c.Bool("recursive"):
					// Times with their fraction of a second as the
					// server listed them, and the directories under it
					// the server could not list; each entry printed as
					// it comes.
					err = cl.Session().ListTreeEach(c.Context, arg, out.entry, out.problem)
					if err == nil && out.entries == 0 && len(out.problems) == 0 && !literal && hasWildcard(path.Base(rp)) {
						// A tree's listing leaves out what is not there
						// (a sender's quick check wants no error), so
						// a pattern that matched nothing comes empty:
						// said, as ls says it (QA).
						err = errNoMatch
					}
				case cmd == 'D':
					// Times to the nanosecond where the server has
					// them, as ls -R's: --json gives a file one time
					// whichever way it was listed (QA).
					reply, err = cl.Session().ListExactEach(c.Context, arg, out.entry, out.other)
				default:
					reply, err = cl.Generic(c.Context, cmd, arg)
				}
				if out != nil {
					out.flush() // what was listed, before any word of what failed
				}
				if err != nil {
					label := rp
					if label == "" {
						label = "." // ls HOST/
					}
					err = fmt.Errorf("%s %s: %w", name, label, err)
					// Only the server's refusal of this path (its E)
					// leaves the session fit for the next one.
					var pe *kermit.PeerError
					refused := (errors.As(err, &pe) || errors.Is(err, errNotSent) || errors.Is(err, errNoMatch)) && c.Context.Err() == nil
					if enc := jsonOutput(c); enc != nil && refused {
						// One per path the server refused, with one path
						// as with several.
						enc.Encode(jsonEvent{Event: "file_error", Name: rp, Error: err.Error()})
					}
					if len(paths) == 1 || !refused {
						return transferErr(err)
					}
					failed = append(failed, rp)
					if jsonOutput(c) == nil {
						fmt.Fprintln(os.Stderr, "kerf:", printable(err.Error()))
					}
					continue
				}
				if cmd != 'D' {
					continue
				}
				out.text(reply)
				out.flush()
				// What could not be listed is said after the rest, and
				// the listing does not pass for whole (exit 4), as
				// ls -R and get -r say it (QA: exit 0, nothing said).
				problems := out.problems
				for _, p := range problems {
					msg := fmt.Sprintf("%s -R: %s: cannot list its contents: %s", name, p.Name, p.Cause)
					if enc := jsonOutput(c); enc != nil {
						enc.Encode(jsonEvent{Event: "file_error", Name: p.Name, Error: msg})
					} else {
						fmt.Fprintln(os.Stderr, "kerf:", printable(msg))
					}
				}
				unread += len(problems)
			}
			if len(failed) > 0 {
				return transferErr(fmt.Errorf("%s: %d of %d failed: %s", name, len(failed), len(paths), strings.Join(failed, ", ")))
			}
			if unread > 0 {
				dirs := "directory"
				if unread > 1 {
					dirs = "directories"
				}
				return transferErr(fmt.Errorf("%s -R: %d %s could not be listed", name, unread, dirs))
			}
			if enc := jsonOutput(c); enc != nil {
				enc.Encode(jsonEvent{Event: "done"})
			}
			return nil
		}),
	}
}

// literally asks the server to take the next rm or ls name as it is. A
// classic Kermit server cannot be asked, nor can a kerf server older
// than the request: the name is then not sent at all.
func literally(ctx context.Context, cl *control.Client) error {
	if err := cl.Session().TakeNextLiterally(ctx); errors.Is(err, kermit.ErrClassicPeer) {
		return fmt.Errorf("the server (a classic Kermit) would take the name for a pattern, its escapes being kerf's own: %w", errNotSent)
	} else if err != nil {
		return fmt.Errorf("the server cannot be asked to take the name as it is, not as a pattern (%w): %w", err, errNotSent)
	}
	return nil
}

// errNoMatch: ls -R of a pattern that matched nothing on the server.
var errNoMatch = errors.New("no files match")

// errNotSent: a remote command's path was not sent, the session being
// fit for the next.
var errNotSent = errors.New("not sent")

// listingText is a listing as ls prints it: a kerf server's lines with
// their times to the second, as ls -l shows them (--json gives the
// fraction); another server's text as it came.
func listingText(reply string) string {
	entries, err := framing.ParseListing(reply)
	if err != nil {
		return reply
	}
	var b []byte
	for _, e := range entries {
		b = framing.AppendListingLine(b, e)
	}
	return string(b)
}

// looksLikeHost reports whether first, the first element of a path,
// would be taken for a host rather than a directory: it has a port
// ("otherhost:1649"), or it is the host of addr.
func looksLikeHost(first, addr string) bool {
	_, addr, _ = userAt(addr)
	if _, f, ok := userAt(first); ok {
		first = f
	}
	host, _, _ := net.SplitHostPort(addr)
	if first == host || "["+host+"]" == first {
		return true
	}
	h, p, err := net.SplitHostPort(first)
	if err != nil || h == "" {
		return false
	}
	_, err = strconv.Atoi(p)
	return err == nil
}

func mvCommand() *cli.Command {
	return &cli.Command{
		Name:      "mv",
		Usage:     "rename a remote file or directory",
		ArgsUsage: "[USER@]HOST[:PORT]/FROM [HOST[:PORT]]/TO",
		Flags:     remoteFlags,
		Action: jsonErrors(func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usageErr("usage: kerf mv HOST/FROM TO")
			}
			addr, from, err := parseTarget(c.Args().Get(0))
			if err != nil {
				return err
			}
			from = quotedElements(from)
			to := c.Args().Get(1)
			toParsed := false // ls's quoted names taken out
			if !strings.HasPrefix(to, "/") {
				if a2, p2, err := parseTarget(to); err == nil && a2 == addr {
					to, toParsed = quotedElements(p2), true
				} else if err == nil && strings.Contains(to, "/") && looksLikeHost(to[:strings.Index(to, "/")], addr) {
					// A name with a port, or FROM's host on another
					// port, is a host, not a directory to move into.
					return usageErr("mv renames on one server: %s is on %s, %s on %s", c.Args().Get(0), addr, to, a2)
				}
			}
			for _, p := range []string{from, to} {
				if strings.Trim(p, "/") == "" {
					return usageErr("mv: %q names no remote path", p)
				}
			}
			cl, err := dial(c, addr)
			if err != nil {
				return err
			}
			defer cl.Close()
			if !toParsed {
				to = quotedElements(to)
			}
			// No wildcards here: escapes are only dropped.
			if _, err := cl.Generic(c.Context, 'R', unescapeName(from), unescapeName(to)); err != nil {
				return transferErr(fmt.Errorf("mv: %w", err))
			}
			if enc := jsonOutput(c); enc != nil {
				enc.Encode(jsonEvent{Event: "done"})
			}
			return nil
		}),
	}
}
