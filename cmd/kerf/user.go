package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"kerf/auth"
)

// defaultConfigDir is os.UserConfigDir()/kerf ($XDG_CONFIG_HOME/kerf).
func defaultConfigDir() string {
	d, err := os.UserConfigDir()
	if err != nil {
		d = "."
	}
	return filepath.Join(d, "kerf")
}

// defaultStateDir holds the server's key, certificate and users file,
// so that `kerf user add` and `kerf serve` agree without flags.
func defaultStateDir() string { return filepath.Join(defaultConfigDir(), "server") }

func defaultKnownHosts() string { return filepath.Join(defaultConfigDir(), auth.KnownHostsFileName) }

func stateFlag() cli.Flag {
	return &cli.StringFlag{Name: "state", Value: defaultStateDir(), EnvVars: []string{"KERF_STATE"},
		Usage: "server state directory (key, certificate, users file)"}
}

func usersFile(c *cli.Context) (*auth.UsersFile, error) {
	u, err := auth.OpenUsers(filepath.Join(c.String("state"), auth.UsersFileName))
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return u, nil
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
				}, secretFlags...),
				Action: flagsAfterName(func(c *cli.Context) error {
					name, err := oneName(c)
					if err != nil {
						return err
					}
					if err := auth.CheckName(name); err != nil {
						return usageErr("%v", err)
					}
					root := c.String("root")
					if root != "" {
						if root, err = filepath.Abs(root); err != nil {
							return usageErr("%v", err)
						}
					}
					u, err := usersFile(c)
					if err != nil {
						return err
					}
					secret, err := newSecret(c, name)
					if err != nil {
						return err
					}
					if err := u.Add(auth.User{Name: name, Secret: secret, Root: root, ReadOnly: c.Bool("read-only")}); err != nil {
						return usageErr("%v", err)
					}
					fmt.Fprintf(os.Stderr, "kerf: added %s to %s\n", name, u.Path())
					return nil
				}),
			},
			{
				Name:      "passwd",
				Usage:     "change a user's password (or token)",
				ArgsUsage: "NAME",
				Flags:     secretFlags,
				Action: flagsAfterName(func(c *cli.Context) error {
					name, err := oneName(c)
					if err != nil {
						return err
					}
					u, err := usersFile(c)
					if err != nil {
						return err
					}
					secret, err := newSecret(c, name)
					if err != nil {
						return err
					}
					if err := u.SetSecret(name, secret); err != nil {
						return usageErr("%v", err)
					}
					fmt.Fprintf(os.Stderr, "kerf: changed the password of %s\n", name)
					return nil
				}),
			},
			{
				Name:      "rm",
				Usage:     "remove a user",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{stateFlag()},
				Action: flagsAfterName(func(c *cli.Context) error {
					name, err := oneName(c)
					if err != nil {
						return err
					}
					u, err := usersFile(c)
					if err != nil {
						return err
					}
					if err := u.Remove(name); err != nil {
						return usageErr("%v", err)
					}
					fmt.Fprintf(os.Stderr, "kerf: removed %s\n", name)
					return nil
				}),
			},
			{
				Name:  "list",
				Usage: "list the users",
				Flags: []cli.Flag{stateFlag()},
				Action: func(c *cli.Context) error {
					u, err := usersFile(c)
					if err != nil {
						return err
					}
					list, err := u.List()
					if err != nil {
						return usageErr("%v", err)
					}
					for _, e := range list {
						root, mode, kind := e.Root, "read-write", "password"
						if root == "" {
							root = "(server --root)"
						}
						if e.ReadOnly {
							mode = "read-only"
						}
						if strings.HasPrefix(e.Secret, "token-") {
							kind = "token"
						}
						fmt.Printf("%s\t%s\t%s\t%s\n", e.Name, kind, mode, root)
					}
					return nil
				},
			},
		},
	}
}

func oneName(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageErr("usage: kerf user %s NAME [flags]", c.Command.Name)
	}
	return c.Args().First(), nil
}

// flagsAfterName lets `kerf user add NAME --root DIR` work: the cli
// package stops parsing flags at the first argument, so a command given
// NAME followed by flags runs again with the flags first.
func flagsAfterName(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		args := c.Args().Slice()
		if len(args) > 1 && strings.HasPrefix(args[1], "-") {
			re := append([]string{c.App.Name, "user", c.Command.Name}, args[1:]...)
			return c.App.RunContext(c.Context, append(re, args[0]))
		}
		return action(c)
	}
}

// newSecret makes the stored form of a new password or token.
func newSecret(c *cli.Context, name string) (string, error) {
	if c.Bool("token") {
		tok, stored := auth.NewToken()
		fmt.Fprintf(os.Stderr, "kerf: token for %s (shown once; use it as the password):\n", name)
		fmt.Println(tok)
		return stored, nil
	}
	var pw string
	switch {
	case c.Bool("password-stdin"):
		line, err := readLine(os.Stdin)
		if err != nil {
			return "", usageErr("reading the password: %v", err)
		}
		pw = line
	case term.IsTerminal(int(os.Stdin.Fd())):
		a, err := promptPassword(fmt.Sprintf("New password for %s: ", name))
		if err != nil {
			return "", err
		}
		b, err := promptPassword("Again: ")
		if err != nil {
			return "", err
		}
		if a != b {
			return "", usageErr("the passwords differ")
		}
		pw = a
	default:
		return "", usageErr("no terminal to ask for a password: use --password-stdin or --token")
	}
	if pw == "" {
		return "", usageErr("empty password")
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

// promptPassword asks on the terminal without echo.
func promptPassword(prompt string) (string, error) {
	fmt.Fprint(os.Stderr, prompt)
	b, err := term.ReadPassword(int(os.Stdin.Fd()))
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return "", usageErr("reading the password: %v", err)
	}
	return string(b), nil
}
