package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"kerf/auth"
	"kerf/control"
)

// defaultConfigDir is os.UserConfigDir()/kerf ($XDG_CONFIG_HOME/kerf,
// or ~/.config/kerf). Without HOME (a systemd unit without User=, env
// -i, a container's entry point) the home directory is the user's in
// the password database, as ssh finds it: the current directory took
// the client's known hosts and key into a tree sent from it, and gave a
// server a key of its working directory's (QA ak). Only with neither
// is it ./kerf.
func defaultConfigDir() string {
	d, err := os.UserConfigDir()
	if err == nil && filepath.IsAbs(d) {
		// (A relative HOME gives a relative one: a directory that
		// depends on where kerf runs, taken no more than ./kerf is.)
		return filepath.Join(d, "kerf")
	}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".config", "kerf") // ($XDG_CONFIG_HOME relative: not taken)
	}
	if fi, err := os.Stat("kerf"); err == nil && fi.IsDir() {
		// What a kerf before this made here: a server's key its
		// clients have pinned, say. Kept, and said (review 55).
		legacyConfigOnce.Do(func() {
			fmt.Fprintln(os.Stderr, "kerf: HOME is not set: using ./kerf in the current directory, as kerf did before; move it to ~/.config/kerf (or give --state, --known-hosts, --identity), or set HOME")
		})
		return "kerf"
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return filepath.Join(u.HomeDir, ".config", "kerf")
	}
	return "kerf"
}

var legacyConfigOnce sync.Once

// configHome is the home directory the default configuration directory
// lies under, "" when it lies under none (./kerf, $XDG_CONFIG_HOME): a
// home that is not there is not made for a host key's pin (QA ak: root
// with HOME=/nonexistent made it).
func configHome() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) || defaultConfigDir() == "kerf" {
		return ""
	}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		return home
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir
	}
	return ""
}

// defaultStateDir holds the server's key, certificate and users file,
// so that `kerf user add` and `kerf serve` agree without flags.
func defaultStateDir() string { return filepath.Join(defaultConfigDir(), "server") }

func defaultKnownHosts() string { return filepath.Join(defaultConfigDir(), auth.KnownHostsFileName) }

// defaultIdentityDir holds the client's key and self-signed certificate
// for public-key login (`kerf key`).
func defaultIdentityDir() string { return filepath.Join(defaultConfigDir(), "client") }

// identityFlag is --identity. It has no EnvVars and no Value: the cli
// package would keep either in the (shared) flag across runs, so
// identityDir reads $KERF_IDENTITY and the default when it is used.
func identityFlag() cli.Flag {
	return &cli.StringFlag{Name: "identity", DefaultText: defaultIdentityDir(),
		Usage: "`DIR` holding this client's key, made by kerf key (else $KERF_IDENTITY); a key there is presented, and logs in when there is no password"}
}

// identityDir is --identity, else $KERF_IDENTITY, else the default
// directory; named reports that the user chose it.
func identityDir(c *cli.Context) (dir string, named bool) {
	if d := c.String("identity"); d != "" {
		return d, true
	}
	if d := os.Getenv("KERF_IDENTITY"); d != "" {
		return d, true
	}
	return defaultIdentityDir(), false
}

func stateFlag() cli.Flag {
	return &cli.StringFlag{Name: "state", Value: defaultStateDir(), EnvVars: []string{"KERF_STATE"},
		Usage: "server state directory (key, certificate, users file)"}
}

func usersFile(c *cli.Context) (*auth.UsersFile, error) {
	u, err := auth.OpenUsers(filepath.Join(c.String("state"), auth.UsersFileName))
	if err != nil {
		return nil, usersErr(err)
	}
	return u, nil
}

// usersErr is the exit error of a `kerf user` command the users file
// refused, its command line being fine: no such user, a user or key
// there already, a user's only way in, a file that cannot be read or
// written. It exits 4, as a command that ran and failed (`kerf rm` of a
// remote file that is not there does too), not 2 (usage), which says
// the command line is wrong (QA). A bad name is the command line's.
func usersErr(err error) error {
	if errors.Is(err, auth.ErrBadName) {
		return usageErr("%v", err)
	}
	return &exitError{exitTransfer, err}
}

func userCommand() *cli.Command {
	secretFlags := []cli.Flag{
		stateFlag(),
		&cli.BoolFlag{Name: "password-stdin", Usage: "read the password from the first line of standard input"},
		&cli.BoolFlag{Name: "token", Usage: "generate a random access token instead of a password (printed once)"},
		&cli.BoolFlag{Name: "bcrypt", Usage: "hash with bcrypt instead of argon2id"},
	}
	return &cli.Command{
		Name:  "user",
		Usage: "manage the server's users (the users file in the state directory)",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a user",
				ArgsUsage: "NAME",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "root", Usage: "the user's directory (default: the server's --root)"},
					&cli.BoolFlag{Name: "read-only", Usage: "the user may only fetch and list"},
					&cli.StringSliceFlag{Name: "key", Usage: "let the client key with this `FINGERPRINT` (as kerf key prints it) log in; repeatable. Without --password-stdin or --token, the user gets no password"},
				}, secretFlags...),
				Action: func(c *cli.Context) error {
					name, err := oneName(c)
					if err != nil {
						return err
					}
					if err := auth.CheckName(name); err != nil {
						return usageErr("%v", err)
					}
					root, err := userRoot(c)
					if err != nil {
						return err
					}
					keys, err := fingerprints(c.StringSlice("key"))
					if err != nil {
						return err
					}
					u, err := usersFile(c)
					if err != nil {
						return err
					}
					if _, there, err := u.Lookup(name); err == nil && there {
						// Said before a password is asked for (QA: without
						// a terminal, the prompt's failure hid it).
						return usersErr(fmt.Errorf("%w: %s", auth.ErrUserExists, name))
					}
					var secret, token string
					if len(keys) == 0 || c.Bool("password-stdin") || c.Bool("token") {
						if secret, token, err = newSecret(c, name); err != nil {
							return err
						}
					}
					if err := u.Add(auth.User{Name: name, Secret: secret, Keys: keys, Root: root, ReadOnly: c.Bool("read-only")}); err != nil {
						return usersErr(err)
					}
					warning := rootWarning(root, name)
					if enc := jsonOutput(c); enc != nil {
						e := userEvent("done", auth.User{Name: name, Secret: secret, Keys: keys, Root: root, ReadOnly: c.Bool("read-only")})
						e.Token, e.UsersFile, e.Warning = token, u.Path(), warning
						enc.Encode(e)
						return nil
					}
					showToken(name, token)
					how := "a password"
					if token != "" {
						how = "a token" // as user list says
					}
					switch {
					case secret == "":
						how = plural(len(keys), "key")
					case len(keys) > 0:
						how += " and " + plural(len(keys), "key")
					}
					fmt.Fprintf(os.Stderr, "kerf: added %s (logs in with %s) to %s\n", name, how, u.Path())
					if warning != "" {
						fmt.Fprintf(os.Stderr, "kerf: warning: %s\n", warning)
					}
					return nil
				},
			},
			{
				Name:      "passwd",
				Usage:     "change a user's password (or token)",
				ArgsUsage: "NAME",
				Flags:     secretFlags,
				Action: namedUser(func(c *cli.Context, name string, u *auth.UsersFile) error {
					// Said before the password is read: "reading the
					// password: EOF" hid it (QA).
					if users, err := u.List(); err == nil && !slices.ContainsFunc(users, func(x auth.User) bool { return x.Name == name }) {
						return usersErr(fmt.Errorf("%w: %s", auth.ErrNoSuchUser, name))
					}
					secret, token, err := newSecret(c, name)
					if err != nil {
						return err
					}
					if err := u.SetSecret(name, secret); err != nil {
						return usersErr(err)
					}
					what := "password"
					if token != "" {
						what = "token"
					}
					if enc := jsonOutput(c); enc != nil {
						enc.Encode(jsonUserEvent{Event: "done", Name: name, Changed: what, Token: token, UsersFile: u.Path()})
						return nil
					}
					showToken(name, token)
					fmt.Fprintf(os.Stderr, "kerf: changed the %s of %s\n", what, name)
					return nil
				}),
			},
			{
				Name:      "set",
				Usage:     "change a user's root or access, keeping its password and keys (its sessions end, to log in again under them)",
				ArgsUsage: "NAME",
				Flags: []cli.Flag{
					stateFlag(),
					&cli.StringFlag{Name: "root", Usage: "the user's directory (\"\": the server's --root)"},
					&cli.BoolFlag{Name: "read-only", Usage: "the user may only fetch and list"},
					&cli.BoolFlag{Name: "read-write", Usage: "the user may send, remove and rename too"},
				},
				Action: namedUser(func(c *cli.Context, name string, u *auth.UsersFile) error {
					var root *string
					var readOnly *bool
					if c.IsSet("root") {
						r, err := userRoot(c)
						if err != nil {
							return err
						}
						root = &r
					}
					// Set, not only true: --read-only=false gives writing
					// back, as --read-write does (QA ao: it changed nothing
					// and said the user was still read-only).
					roSet, rwSet := c.IsSet("read-only"), c.IsSet("read-write")
					switch {
					case roSet && rwSet && c.Bool("read-only") == c.Bool("read-write"):
						return usageErr("--read-only and --read-write: one or the other")
					case roSet:
						ro := c.Bool("read-only")
						readOnly = &ro
					case rwSet:
						ro := !c.Bool("read-write")
						readOnly = &ro
					}
					if root == nil && readOnly == nil {
						return usageErr("nothing to change: give --root, --read-only or --read-write")
					}
					if err := u.SetAccess(name, root, readOnly); err != nil {
						return usersErr(err)
					}
					now, _, err := u.Lookup(name)
					if err != nil {
						return usersErr(err)
					}
					warning := rootWarning(now.Root, name)
					if enc := jsonOutput(c); enc != nil {
						e := userEvent("done", now)
						e.UsersFile, e.Warning = u.Path(), warning
						enc.Encode(e)
						return nil
					}
					shownRoot, access := now.Root, "read-write"
					if shownRoot == "" {
						shownRoot = "the server's --root"
					}
					if now.ReadOnly {
						access = "read-only"
					}
					fmt.Fprintf(os.Stderr, "kerf: %s now has %s, %s\n", name, shownRoot, access)
					if warning != "" {
						fmt.Fprintf(os.Stderr, "kerf: warning: %s\n", warning)
					}
					return nil
				}),
			},
			{
				Name:      "rm",
				Usage:     "remove a user",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{stateFlag()},
				Action: namedUser(func(c *cli.Context, name string, u *auth.UsersFile) error {
					if err := u.Remove(name); err != nil {
						return usersErr(err)
					}
					if enc := jsonOutput(c); enc != nil {
						enc.Encode(jsonUserEvent{Event: "done", Name: name, UsersFile: u.Path()})
						return nil
					}
					fmt.Fprintf(os.Stderr, "kerf: removed %s\n", name)
					return nil
				}),
			},
			userKeyCommand(),
			{
				Name:  "list",
				Usage: "list the users: name, how they log in (password, token, key), access, root",
				Flags: []cli.Flag{stateFlag()},
				Action: func(c *cli.Context) error {
					u, err := usersFile(c)
					if err != nil {
						return err
					}
					list, err := u.List()
					if err != nil {
						return usersErr(err)
					}
					note := ""
					if _, err := os.Stat(u.Path()); errors.Is(err, os.ErrNotExist) {
						// Not an empty list: a mistyped --state says so (QA).
						note = fmt.Sprintf("no users file at %s (no users yet: kerf user add)", u.Path())
					}
					if enc := jsonOutput(c); enc != nil {
						for _, e := range list {
							enc.Encode(userEvent("user", e))
						}
						enc.Encode(jsonUserEvent{Event: "done", UsersFile: u.Path(), Warning: note})
						return nil
					}
					if note != "" {
						fmt.Fprintf(os.Stderr, "kerf: %s\n", note)
					}
					for _, e := range list {
						root, mode := e.Root, "read-write"
						if root == "" {
							root = "(server --root)"
						}
						if e.ReadOnly {
							mode = "read-only"
						}
						fmt.Printf("%s\t%s\t%s\t%s\n", e.Name, loginMethods(e), mode, root)
					}
					return nil
				},
			},
		},
	}
}

// jsonUserEvent is a --json event of the user and key commands: a
// listing's user or key, a key added or removed, and the done that ends
// each command, carrying what its text said (a new token, a warning).
type jsonUserEvent struct {
	Event string `json:"event"`          // user, key, key_added, key_removed, done
	Name  string `json:"name,omitempty"` // the user
	// Login is how the user logs in, as user list's text says it:
	// password, token, key, password+key, token+key (none: no way in).
	Login       string   `json:"login,omitempty"`
	Keys        []string `json:"keys,omitempty"`        // the user's key fingerprints
	Fingerprint string   `json:"fingerprint,omitempty"` // key, key_added, key_removed; kerf key's done
	Access      string   `json:"access,omitempty"`      // read-write or read-only
	Root        string   `json:"root,omitempty"`        // absent: the server's --root
	Changed     string   `json:"changed,omitempty"`     // passwd: password or token
	Token       string   `json:"token,omitempty"`       // a new token, shown this once
	UsersFile   string   `json:"users_file,omitempty"`
	Identity    string   `json:"identity,omitempty"` // kerf key: the client key's directory
	Created     bool     `json:"created,omitempty"`  // kerf key: the key was made now
	Warning     string   `json:"warning,omitempty"`  // said on stderr without --json
}

// userEvent is the event of kind ev for user e: name, how e logs in,
// keys, access, root.
// userRoot is --root made absolute ("" for the server's --root),
// refused where it holds the server's state: its sessions could read
// the server's key and rewrite its users (serve refuses them).
func userRoot(c *cli.Context) (string, error) {
	root := c.String("root")
	if root == "" {
		return "", nil
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return "", usageErr("%v", err)
	}
	if p := control.PrivateWithin(root, []string{c.String("state")}); p != "" {
		return "", usageErr("--root %s holds the server's state directory %s: give a root outside it, or move the state (--state)", root, p)
	}
	return root, nil
}

// rootWarning says, if root is not a directory, that name cannot log
// in yet: the server does not make it (a typing error or a file system
// not mounted must not become a tree).
func rootWarning(root, name string) string {
	if fi, err := os.Stat(root); root != "" && (err != nil || !fi.IsDir()) {
		return fmt.Sprintf("%s is not a directory yet; %s cannot log in until it is", root, name)
	}
	return ""
}

func userEvent(ev string, e auth.User) jsonUserEvent {
	access := "read-write"
	if e.ReadOnly {
		access = "read-only"
	}
	return jsonUserEvent{Event: ev, Name: e.Name, Login: loginMethods(e), Keys: e.Keys, Access: access, Root: e.Root}
}

// loginMethods says how a user logs in: "password", "token", "key", or
// a password or token and keys ("password+key").
func loginMethods(e auth.User) string {
	var m []string
	switch {
	case strings.HasPrefix(e.Secret, "token-"):
		m = append(m, "token")
	case e.Secret != "":
		m = append(m, "password")
	}
	if len(e.Keys) > 0 {
		m = append(m, "key")
	}
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(m, "+")
}

func plural(n int, what string) string {
	if n == 1 {
		return "a " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// fingerprints checks key fingerprints given on the command line.
func fingerprints(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fp, err := auth.CheckFingerprint(a)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		out = append(out, fp)
	}
	return out, nil
}

// userKeyCommand is `kerf user key add|rm|list`: the client keys that
// may log in as a user (public-key login, see `kerf key`).
func userKeyCommand() *cli.Command {
	change := func(verb, usage string, do func(u *auth.UsersFile, name, fp string) error, done string) *cli.Command {
		return &cli.Command{
			Name:      verb,
			Usage:     usage + " (fingerprints as kerf key prints them)",
			ArgsUsage: "NAME FINGERPRINT...",
			Flags:     []cli.Flag{stateFlag()},
			Action: func(c *cli.Context) error {
				if c.NArg() < 2 {
					return usageErr("usage: kerf user key %s NAME FINGERPRINT... [--state DIR]", verb)
				}
				name := c.Args().First()
				if err := auth.CheckName(name); err != nil {
					return usageErr("%v", err)
				}
				keys, err := fingerprints(c.Args().Tail())
				if err != nil {
					return err
				}
				u, err := usersFile(c)
				if err != nil {
					return err
				}
				// All or nothing: a key already there (add) or not there
				// (rm) is said before any is changed, not after the ones
				// before it were (QA: exit 2, and the file changed).
				if list, err := u.List(); err == nil {
					for _, e := range list {
						if e.Name != name {
							continue
						}
						for _, fp := range keys {
							has := slices.Contains(e.Keys, fp)
							if verb == "add" && has {
								return usersErr(fmt.Errorf("%s already has key %s (nothing changed)", name, fp))
							}
							if verb == "rm" && !has {
								return usersErr(fmt.Errorf("%s has no key %s (nothing changed)", name, fp))
							}
						}
					}
				}
				enc := jsonOutput(c)
				for _, fp := range keys {
					if err := do(u, name, fp); err != nil {
						return usersErr(err)
					}
					if enc != nil {
						enc.Encode(jsonUserEvent{Event: "key_" + done, Name: name, Fingerprint: fp})
						continue
					}
					fmt.Fprintf(os.Stderr, "kerf: %s key %s %s %s\n", done, fp, map[bool]string{true: "to", false: "from"}[verb == "add"], name)
				}
				if enc != nil {
					enc.Encode(jsonUserEvent{Event: "done", Name: name, UsersFile: u.Path()})
				}
				return nil
			},
		}
	}
	return &cli.Command{
		Name:  "key",
		Usage: "manage the client keys that may log in as a user without a password",
		Subcommands: []*cli.Command{
			change("add", "let client keys log in as a user", (*auth.UsersFile).AddKey, "added"),
			change("rm", "withdraw client keys from a user", (*auth.UsersFile).RemoveKey, "removed"),
			{
				Name:      "list",
				Usage:     "print a user's key fingerprints, one a line",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{stateFlag()},
				Action: namedUser(func(c *cli.Context, name string, u *auth.UsersFile) error {
					list, err := u.List()
					if err != nil {
						return usersErr(err)
					}
					for _, e := range list {
						if e.Name == name {
							enc := jsonOutput(c)
							for _, k := range e.Keys {
								if enc != nil {
									enc.Encode(jsonUserEvent{Event: "key", Name: name, Fingerprint: k})
								} else {
									fmt.Println(k)
								}
							}
							if enc != nil {
								enc.Encode(jsonUserEvent{Event: "done", Name: name, UsersFile: u.Path()})
							}
							return nil
						}
					}
					return usersErr(fmt.Errorf("%w: %s", auth.ErrNoSuchUser, name))
				}),
			},
		},
	}
}

// namedUser is the action of a `kerf user` subcommand on one existing
// NAME: it takes the name and opens the users file for action.
func namedUser(action func(c *cli.Context, name string, u *auth.UsersFile) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		name, err := oneName(c)
		if err != nil {
			return err
		}
		if err := auth.CheckName(name); err != nil {
			// No user can have it: the command line's mistake, not
			// "no such user" (exit 2, not 4).
			return usageErr("%v", err)
		}
		u, err := usersFile(c)
		if err != nil {
			return err
		}
		return action(c, name, u)
	}
}

func oneName(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageErr("usage: kerf user %s NAME [flags]", c.Command.Name)
	}
	return c.Args().First(), nil
}

// newSecret makes the stored form of a new password or token.
// A token (--token) is returned to be shown only once it is saved: one
// printed for a change that then failed would work nowhere.
func newSecret(c *cli.Context, name string) (stored, token string, err error) {
	if c.Bool("token") {
		if c.Bool("password-stdin") || c.Bool("bcrypt") {
			return "", "", usageErr("--token makes the secret: not with --password-stdin or --bcrypt")
		}
		tok, stored := auth.NewToken()
		if !control.LoginFits(name, tok) {
			return "", "", usageErr("a token (%d characters) and the name %s do not fit in one REMOTE LOGIN: use a shorter name, a password or a key", len(tok), name)
		}
		return stored, tok, nil
	}
	stored, err = newPassword(c, name)
	return stored, "", err
}

// showToken prints a new token (if any) once it is saved.
func showToken(name, token string) {
	if token == "" {
		return
	}
	fmt.Fprintf(os.Stderr, "kerf: token for %s (shown once; use it as the password):\n", name)
	fmt.Println(token)
}

// newPassword reads a new password (--password-stdin, or twice from the
// terminal) and returns its stored form.
func newPassword(c *cli.Context, name string) (string, error) {
	var pw string
	switch {
	case c.Bool("password-stdin"):
		line, err := readLine(os.Stdin)
		if err != nil {
			return "", usageErr("reading the password: %v", err)
		}
		pw = line
	case term.IsTerminal(int(os.Stdin.Fd())):
		a, err := promptPassword(c.Context, fmt.Sprintf("New password for %s: ", name))
		if err != nil {
			return "", err
		}
		b, err := promptPassword(c.Context, "Again: ")
		if err != nil {
			return "", err
		}
		if a != b {
			return "", usageErr("the passwords differ")
		}
		pw = a
	default:
		alt := "--password-stdin or --token"
		if c.Command.Name == "add" {
			alt = "--password-stdin, --token or --key" // only add takes a key instead
		}
		return "", usageErr("no terminal to ask for a password: use %s", alt)
	}
	if pw == "" {
		return "", usageErr("empty password")
	}
	if !control.LoginFits(name, pw) {
		// It could never log in (QA: a 100-byte password was taken).
		return "", usageErr("the name and password are too long for one REMOTE LOGIN (about 80 bytes together, a byte above 127 counting 3): a shorter password, or a key")
	}
	if c.Bool("bcrypt") {
		h, err := auth.HashPasswordBcrypt(pw)
		if err != nil {
			return "", usageErr("%v", err)
		}
		return h, nil
	}
	return auth.HashPassword(pw, auth.DefaultArgon2), nil
}

// readLine reads one line (without its line end).
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// promptPassword asks on the terminal without echo. Echo goes off here,
// before the read starts, and comes back when this returns: a read that
// turned it off itself (term.ReadPassword) could do so after a Ctrl-C
// had put the terminal back, and leave it off (review).
func promptPassword(ctx context.Context, prompt string) (string, error) {
	fd := int(os.Stdin.Fd())
	fmt.Fprint(os.Stderr, prompt)
	// The terminal's mode changes under promptTerminalMu, which a hard
	// stop (SIGQUIT) takes for good: echo is not turned off after the
	// stop put it back (CI: a quit right at the prompt left it off).
	promptTerminalMu.Lock()
	saved, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err == nil {
		quiet := *saved
		quiet.Lflag &^= unix.ECHO
		quiet.Lflag |= unix.ICANON | unix.ISIG
		quiet.Iflag |= unix.ICRNL
		err = unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet)
	}
	if err == nil {
		promptTermios.Store(saved)
	}
	promptTerminalMu.Unlock()
	if err != nil {
		fmt.Fprintln(os.Stderr)
		return "", usageErr("reading the password: %v", err)
	}
	pw, err := fromTerminal(ctx, func() (string, error) { return readLine(os.Stdin) })
	promptTerminalMu.Lock()
	unix.IoctlSetTermios(fd, ioctlSetTermios, saved)
	promptTermios.Store(nil)
	promptTerminalMu.Unlock()
	fmt.Fprintln(os.Stderr)
	if errors.Is(err, errAtPrompt) {
		return "", err
	}
	if err != nil {
		return "", usageErr("reading the password: %v", err)
	}
	return pw, nil
}

// promptTermios is the terminal's mode before a password prompt turned
// its echo off, while the prompt waits: what a hard stop (SIGQUIT)
// puts back.
var promptTermios atomic.Pointer[unix.Termios]

// promptTerminalMu orders a prompt's changes of the terminal's mode
// with a hard stop's restoring of it.
var promptTerminalMu sync.Mutex

// restorePromptTerminal puts back the terminal mode a password prompt
// under way changed, if any. For a hard stop: it keeps the terminal's
// lock, so that no prompt changes the mode again before the exit.
func restorePromptTerminal() {
	promptTerminalMu.Lock()
	if t := promptTermios.Load(); t != nil {
		unix.IoctlSetTermios(int(os.Stdin.Fd()), ioctlSetTermios, t)
	}
}

// errAtPrompt is a prompt's error when a signal (Ctrl-C, SIGTERM) came
// while it waited.
var errAtPrompt = errors.New("interrupted at a prompt")

// fromTerminal runs read, a prompt's read of the terminal, until it
// returns or ctx ends: the read blocks in the kernel, and Ctrl-C at a
// prompt did nothing until Enter (QA). The read is then left to the
// process's exit; the caller puts back any terminal mode it changed.
func fromTerminal(ctx context.Context, read func() (string, error)) (string, error) {
	if ctx.Err() != nil {
		return "", errAtPrompt
	}
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		line, err := read()
		done <- result{line, err}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case <-ctx.Done():
		return "", errAtPrompt
	}
}
