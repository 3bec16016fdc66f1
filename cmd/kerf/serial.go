package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
	"kerf/serialfallback"
)

// serialLinkFlags set up the line and the protocol; each subcommand adds
// what a file transfer needs.
var serialLinkFlags = []cli.Flag{
	&cli.StringFlag{Name: "line", Aliases: []string{"l"}, Usage: "serial device or pty path (taken under its UUCP lock, /var/lock/LCK..NAME, as C-Kermit takes it: a line another program holds is refused)"},
	&cli.BoolFlag{Name: "stdio", Usage: "use standard input/output as the line (kerf as the remote Kermit)"},
	&cli.StringFlag{Name: "command", Usage: "run this shell command, its standard input and output the line (C-Kermit's SET HOST /COMMAND): a Kermit through ssh, e.g. 'ssh host gkermit -r' (its stderr is yours, for a password prompt)"},
	&cli.IntFlag{Name: "speed", Aliases: []string{"b"}, Value: 115200, Usage: "line speed in bits per second (the port is set to it, and packets are timed by it: over a modem whose line is slower than its port, give the line's speed; a slower line is followed from its ACKs, but its first packets may be sent again too soon)"},
	&cli.StringFlag{Name: "parity", Value: "auto", Usage: "auto, none, even, odd, mark or space (not none: 7-bit link, 8th-bit prefixing; auto: none until the peer's first packet shows even, odd or mark parity, then that)"},
	&cli.StringFlag{Name: "flow", Value: "none", Usage: "none, rtscts or xonxoff"},
	&cli.IntFlag{Name: "window", Value: 31, Usage: "sliding window slots (1-31)"},
	&cli.IntFlag{Name: "packet-length", Value: 0, Usage: "longest packet to receive (20-9024; 0: automatic; below 94 no long packets, as for a Kermit with small buffers)"},
	&cli.IntFlag{Name: "block-check", Value: 3, Usage: "block check type: 1, 2 or 3, or 5 for type 3 on every packet (C-Kermit's FORCE-3, which the peer must be set to as well; G-Kermit has none; a peer that forces it is followed anyway)"},
	&cli.StringFlag{Name: "unprefix", Value: "auto", Usage: "control prefixing: auto, cautious, minimal or none"},
	&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "initial packet timeout, more than 0, then adapted to the round trip measured; the peer is told it in whole seconds, 1-94, as how long to wait for this side"},
	&cli.IntFlag{Name: "start-of-packet", Value: 1, Usage: "packet mark as an ASCII code, 1-31 but not 13, the same both ways (C-Kermit's SET SEND and SET RECEIVE START-OF-PACKET; the peer must be set alike): for a line that eats Ctrl-A (1)"},
	&cli.IntFlag{Name: "retries", Value: defaultRetries, Usage: "retries after timeouts, in a row without progress, before giving up (1-99); either side waits at least this many times the peer's timeout (its Send-Init TIME) for a peer that has gone, though a sender sends again sooner"},
}

const defaultRetries = 20

// Each subcommand takes only the flags that do something for it.
var (
	streamingFlag    = &cli.BoolFlag{Name: "streaming", Usage: "offer streaming (no ACKs for data; only for error-free links)"}
	textFlag         = &cli.BoolFlag{Name: "text", Usage: "text mode (LF <-> CRLF) for files sent, and for files received from a peer that does not say"}
	sendTextFlag     = &cli.BoolFlag{Name: "text", Usage: "send as text (LF becomes CRLF on the line, the receiver stores its own line ends)"}
	resumeFlag       = &cli.BoolFlag{Name: "resume", Usage: "recover partial files at the receiver"}
	serverResumeFlag = &cli.BoolFlag{Name: "resume", Usage: "serve every GET as a REGET: a client's partial file is continued, not sent again whole"}
	dirFlag          = &cli.StringFlag{Name: "dir", Aliases: []string{"d"}, Value: ".", Usage: "directory for received files"}

	serialSendFlags    = slices.Concat(serialLinkFlags, []cli.Flag{streamingFlag, sendTextFlag, resumeFlag, &cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "send directory trees"}, excludeFlag, excludeFromFlag, filesFromFlag, from0Flag, removeSourceFlag})
	serialReceiveFlags = slices.Concat(serialLinkFlags, []cli.Flag{streamingFlag, textFlag, dirFlag, sparseFlag})
	serialGetFlags     = slices.Concat(serialLinkFlags, []cli.Flag{streamingFlag, textFlag, resumeFlag, dirFlag, sparseFlag, &cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "a remote directory stands for its tree, built under --dir (GET /RECURSIVE: a kerf or C-Kermit server)"}})
	// A server fetches nothing: no --recursive (QA ag: get's, taken and
	// ignored). Its --resume is a sender's, for what clients GET.
	serialServerFlags = slices.Concat(serialLinkFlags, []cli.Flag{streamingFlag, textFlag, serverResumeFlag, dirFlag, sparseFlag})
)

var sparseFlag = &cli.BoolFlag{Name: "sparse", Usage: "leave holes where received files have runs of zeros (disk images; off: zeros are written, as allocated on purpose)"}

// interruptGrace is how long an interrupted serial transfer may take to
// tell its peer before the line is closed under it.
const interruptGrace = 2 * time.Second

func serialSession(c *cli.Context) (*kermit.Session, func(), error) {
	lc := serialfallback.LinkConfig{
		Device: c.String("line"), Speed: c.Int("speed"), Parity: c.String("parity"),
		Flow: c.String("flow"), Stdio: c.Bool("stdio"), Command: c.String("command"),
	}
	switch c.Command.Name {
	case "send", "get", "finish", "bye":
		lc.FlushInput = true // it speaks first: an old E is no answer
	case "receive":
		// What a sender that gave up left (its tries of S, its E) would
		// be taken for the next sender's (QA af): discarded, as
		// C-Kermit's RECEIVE does. A sender that began first loses its
		// first S, and sends it again at its timeout.
		lc.FlushInput = true
	}
	detectParity := strings.EqualFold(lc.Parity, "auto")
	if detectParity {
		lc.Parity = serialfallback.ParityNone
	}
	switch given := btoi(lc.Device != "") + btoi(lc.Stdio) + btoi(c.IsSet("command")); {
	case given == 0:
		return nil, nil, usageErr("give --line DEV, --stdio or --command CMD")
	case given > 1:
		return nil, nil, usageErr("--line, --stdio and --command: give one")
	case c.IsSet("command") && strings.TrimSpace(lc.Command) == "":
		return nil, nil, usageErr("--command: empty")
	case lc.Command != "" && !strings.EqualFold(lc.Flow, serialfallback.FlowNone) && lc.Flow != "":
		return nil, nil, usageErr("--flow %s: a command's pipes have no flow control to set", lc.Flow)
	}
	if lc.Speed < 0 || c.IsSet("speed") && lc.Speed == 0 {
		return nil, nil, usageErr("--speed %d: want the line's speed in bits per second", lc.Speed)
	}
	switch strings.ToLower(lc.Parity) {
	case "", serialfallback.ParityNone, serialfallback.ParityEven, serialfallback.ParityOdd, serialfallback.ParityMark, serialfallback.ParitySpace:
	default:
		return nil, nil, usageErr("--parity %q: want auto, none, even, odd, mark or space", c.String("parity"))
	}
	switch strings.ToLower(lc.Flow) {
	case "", serialfallback.FlowNone, serialfallback.FlowRTSCTS, serialfallback.FlowXONXOFF:
	default:
		return nil, nil, usageErr("--flow %q: want none, rtscts or xonxoff", lc.Flow)
	}
	if c.Duration("timeout") <= 0 {
		// 0 took the default, 5s, where C-Kermit's 0 means no timeout.
		return nil, nil, usageErr("--timeout %v: must be more than 0", c.Duration("timeout"))
	}
	k := kermit.DefaultConfig()
	k.Window = c.Int("window")
	k.MaxPacket = c.Int("packet-length")
	k.Check = framing.CheckType(c.Int("block-check"))
	switch {
	case k.Window < 1 || k.Window > 31:
		return nil, nil, usageErr("--window %d: must be 1-31", k.Window)
	case k.MaxPacket != 0 && k.MaxPacket < kermit.MinPacket || k.MaxPacket > 9024:
		return nil, nil, usageErr("--packet-length %d: must be %d-9024", k.MaxPacket, kermit.MinPacket)
	case (k.Check < 1 || k.Check > 3) && k.Check != kermit.CheckForce3:
		return nil, nil, usageErr("--block-check %d: must be 1, 2, 3 or 5", k.Check)
	}
	switch som := c.Int("start-of-packet"); {
	case som < 1 || som > 31 || som == '\r':
		return nil, nil, usageErr("--start-of-packet %d: want a control character's code, 1-31 but not 13 (CR ends packets)", som)
	default:
		k.Mark = byte(som)
	}
	k.MaxRetries = c.Int("retries")
	if k.MaxRetries < 1 || k.MaxRetries > 99 {
		return nil, nil, usageErr("--retries must be 1-99")
	}
	k.Streaming = c.Bool("streaming")
	// The user's own terminal as the line: three Ctrl-C typed end it, as
	// they end kermit -r (raw mode passes them on as bytes).
	k.CtrlCQuits = lc.Stdio && term.IsTerminal(int(os.Stdin.Fd()))
	k.Text = c.Bool("text")
	k.Resume = c.Bool("resume")
	k.Timeout = c.Duration("timeout")
	k.Parity = lc.SevenBit()
	k.DetectParity = detectParity
	switch c.String("unprefix") {
	case "auto":
		// Between kerf peers on an 8-bit line without XON/XOFF, only the
		// packet mark needs a prefix; other peers get C-Kermit's set.
		k.Unprefix = kermit.UnprefixMinimal
		if strings.EqualFold(lc.Flow, "xonxoff") {
			k.Unprefix = kermit.UnprefixCautious
		}
	case "cautious":
		k.Unprefix = kermit.UnprefixCautious
	case "minimal":
		k.Unprefix = kermit.UnprefixMinimal
	case "none":
		k.Unprefix = kermit.UnprefixNone
	default:
		return nil, nil, usageErr("--unprefix must be auto, cautious, minimal or none")
	}
	if lc.Speed > 0 && !lc.Stdio && lc.Command == "" {
		k.LineSpeed = lc.Speed // a pipe's speed is not the port's
	}
	if c.Command.Name == "server" {
		k.Log = logger(c) // a server's records, as kerf serve writes them (review)
	} else {
		k.Log = clientLogger(c)
	}
	link, err := serialfallback.Open(lc)
	if err == nil {
		sessionBegan.Store(true)
	}
	if err != nil {
		return nil, nil, connectErr(err)
	}
	s := kermit.NewSession(link, k)
	// Interrupted (Ctrl-C, SIGTERM): the engine tells the peer with an E
	// packet; a line that takes nothing more would hold it in a write, so
	// the line is closed after a moment's grace.
	stop := context.AfterFunc(c.Context, func() {
		time.AfterFunc(interruptGrace, func() { link.Close() })
	})
	return s, func() { stop(); s.Close(); link.Close() }, nil
}

func serialCommand() *cli.Command {
	return &cli.Command{
		Name:  "serial",
		Usage: "classic Kermit over a serial line, pty, stdio or a command's pipes (interoperates with C-Kermit and G-Kermit)",
		Subcommands: []*cli.Command{
			{
				Name: "send", Usage: "send files", ArgsUsage: "FILE... (with --files-from LIST: [DIR])", Flags: serialSendFlags,
				Action: jsonErrors(func(c *cli.Context) error {
					listing := c.IsSet(filesFromFlag.Name)
					if c.NArg() < 1 && !listing {
						return usageErr("usage: kerf serial send --line DEV FILE... (or --files-from LIST [DIR])")
					}
					if listing && c.String(filesFromFlag.Name) == "-" && c.Bool("stdio") {
						return usageErr("--files-from - reads standard input, which --stdio makes the line: give the list as a file")
					}
					src, none, err := sendSourcesOf(c, c.Args().Slice())
					switch {
					case err != nil:
						return err
					case none:
						return newReporter(c, nil).end(nil, false)
					}
					ex, _, err := exclusions(c, true)
					if err != nil {
						return err
					}
					files, _, skipped, err := sourceFiles(src, c.Bool("recursive"), ex)
					if err != nil {
						return err
					}
					s, done, err := serialSession(c)
					if err != nil {
						return err
					}
					defer done()
					rep := newReporter(c, files)
					rep.skippedLocal(skipped)
					s.SetEvents(rep.event)
					// As a network send: a receiver that fails the group
					// at its end for one file (a rename refused) has the
					// files it did save confirmed by a second pass, not
					// all told not saved (QA r).
					err = kermit.SendParallelWith(c.Context, []*kermit.Session{s}, kermit.ListOf(files), kermit.SendOptions{})
					if err == nil && c.Bool("resume") && s.ResumeUnavailable() && !c.Bool("quiet") && jsonOutput(c) == nil {
						// (QA an: G-Kermit, without RESEND, was sent
						// whole files, and nothing said so.)
						fmt.Fprintln(os.Stderr, "kerf: the receiver cannot resume (its Kermit has no RESEND): files went whole")
					}
					return rep.end(err, false)
				}),
			},
			{
				Name: "receive", Usage: "receive files into --dir", Flags: serialReceiveFlags,
				Action: jsonErrors(func(c *cli.Context) error {
					return serialReceive(c, false, func(s *kermit.Session, store *filestore.Dir, rep *reporter) error {
						err := s.Receive(c.Context, store)
						if errors.Is(err, kermit.ErrGroupSaveFailed) && s.PeerIsKerf() {
							// A kerf sender sends again, resuming, what it
							// cannot count as saved, to confirm what was
							// (QA r: all told not saved for one rename
							// refused): taken, if it comes soon. Where it
							// stored every file that failed, the receive
							// succeeded, as its sender says (QA ad).
							if secondPass(c.Context, s, store) == nil && rep.failures() == 0 {
								err = nil
							}
						}
						if err == nil {
							s.AnswerLateRepeats(c.Context) // a noisy line may lose the B's ACK
						}
						return err
					})
				}),
			},
			{
				Name: "get", Usage: "get files from a Kermit server", ArgsUsage: "REMOTE-FILESPEC...", Flags: serialGetFlags,
				Action: jsonErrors(func(c *cli.Context) error {
					if c.NArg() < 1 {
						return usageErr("usage: kerf serial get --line DEV REMOTE...")
					}
					return serialReceive(c, false, func(s *kermit.Session, store *filestore.Dir, rep *reporter) error {
						// As a network get.
						rep.expectNames(c.Args().Slice())
						opts := kermit.GetOptions{Recursive: c.Bool("recursive"), Resume: c.Bool("resume")}
						store.Flat = !opts.Recursive && !opts.Resume
						store.UniqueNames = c.NArg() > 1 || store.Flat
						// Only what was asked for (review: a serial get
						// took any name its peer sent). The peer may be
						// kerf or a classic Kermit: compared as a
						// classic's, which takes a name as asked too.
						store.Expect = expectNames(c.Args().Slice(), opts.Recursive || opts.Resume, true)
						specs := c.Args().Slice()
						for _, spec := range specs {
							// Refused only by a classic Kermit, which would
							// take the directory's escaped brackets as a
							// pattern: the peer is found out first (the
							// review: a kerf serial server was refused).
							if refused := classicDirPattern(spec, spec); refused != nil {
								if err := s.Hello(c.Context); err != nil {
									return err
								}
								if !s.PeerIsKerf() {
									return refused
								}
								break
							}
						}
						get := func(spec string) error { return s.GetWith(c.Context, spec, opts, store) }
						err := getEach(specGroups(specs, true), func(spec string) error {
							return classicTreeAgain(c.Context, s, s, opts.Recursive, specs, spec, get(spec), get)
						}, rep.refusedSpec)
						err = classicTreeHint(c, err, s.PeerIsKerf(), opts.Recursive, specs)
						if err == nil && !s.PeerIsKerf() {
							rep.missingNames()
						}
						if err == nil {
							s.AnswerLateRepeats(c.Context)
						}
						if c.IsSet("command") {
							finishStarted(c.Context, s)
						}
						return err
					})
				}),
			},
			{
				Name: "finish", Usage: "tell a Kermit server to leave server mode (FINISH)", Flags: serialLinkFlags,
				Action: jsonErrors(func(c *cli.Context) error { return serialServerCommand(c, 'F') }),
			},
			{
				Name: "bye", Usage: "tell a Kermit server to leave server mode and log out or exit (BYE; C-Kermit refuses it, \"BYE disabled\", unless told ENABLE BYE: finish works by default)", Flags: serialLinkFlags,
				Action: jsonErrors(func(c *cli.Context) error { return serialServerCommand(c, 'L') }),
			},
			{
				Name: "server", Usage: "be a Kermit server for --dir", Flags: serialServerFlags,
				Action: jsonErrors(func(c *cli.Context) error {
					return serialReceive(c, true, func(s *kermit.Session, store *filestore.Dir, _ *reporter) error {
						// A line outlives its clients; stdio and a command's
						// pipes end with theirs.
						s.SetKeepServing(!c.Bool("stdio") && !c.IsSet("command"))
						return s.Serve(c.Context, store)
					})
				}),
			},
		},
	}
}

// serialServerCommand sends a Kermit server a generic command without
// arguments (FINISH, BYE) and waits for its ACK.
func serialServerCommand(c *cli.Context, cmd byte) error {
	if c.NArg() > 0 {
		return usageErr("usage: kerf serial %s --line DEV", c.Command.Name)
	}
	s, done, err := serialSession(c)
	if err != nil {
		return err
	}
	defer done()
	if _, err := s.Generic(c.Context, cmd); err != nil {
		return transferErr(fmt.Errorf("%s: %w", c.Command.Name, err))
	}
	return nil
}

func serialReceive(c *cli.Context, serving bool, run func(*kermit.Session, *filestore.Dir, *reporter) error) error {
	if c.Command.Name != "get" && c.NArg() > 0 {
		// A directory given as with kerf get would be passed over, and
		// the files land in "." instead.
		return usageErr("usage: kerf serial %s --line DEV [--dir DIR]: %q is not taken (the directory goes in --dir)", c.Command.Name, c.Args().First())
	}
	store, err := filestore.Open(c.String("dir"))
	if err != nil {
		return usageErr("%v", err)
	}
	defer store.Close()
	store.Sparse = c.Bool("sparse")
	s, done, err := serialSession(c)
	if err != nil {
		return err
	}
	defer done()
	rep := newReporter(c, nil)
	rep.serving = serving
	s.SetEvents(rep.event)
	// A server's client was told of the files it did not get; receive
	// and get were run for the files, so those fail them.
	err = run(s, store, rep)
	noteModesNotKept(store)
	return rep.end(err, !serving)
}

// secondPass receives the group a kerf sender sends after one whose
// files could not all be saved (kermit.ErrGroupSaveFailed), giving up
// if nothing at all has come from it within secondPassWait (a sender
// from before it sends none). Its outcome is the first group's,
// already reported: the files it confirms are told skipped, those that
// fail again failed, and those it stores done again (the failure
// withdrawn). Its error is the pass's. (Watched by the bytes heard, not by events: its
// directories, which come first, make none; the review.)
func secondPass(ctx context.Context, s *kermit.Session, store kermit.Store) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	before := s.BytesHeard()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		give := time.After(secondPassWait)
		for {
			select {
			case <-tick.C:
				if s.BytesHeard() > before {
					return
				}
			case <-give:
				cancel()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return s.Receive(ctx, store)
}

// secondPassWait bounds the wait for a kerf sender's second pass.
const secondPassWait = 15 * time.Second

// finishStarted ends the server mode of a Kermit that a get started
// with --command (kermit -x through ssh): it is this get's to end, and
// no later command reaches it. Best effort: the command's end stops a
// server that does not answer.
func finishStarted(ctx context.Context, s *kermit.Session) {
	ctx, cancel := context.WithTimeout(ctx, finishWait)
	defer cancel()
	s.Generic(ctx, 'F')
}

// finishWait bounds finishStarted.
const finishWait = 10 * time.Second

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
