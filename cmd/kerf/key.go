package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"kerf/auth"
)

// keyCommand is `kerf key`: the client's key for public-key login,
// made on first use.
func keyCommand() *cli.Command {
	return &cli.Command{
		Name:  "key",
		Usage: "print this client's key fingerprint (making the key on first use), to log in without a password",
		Flags: []cli.Flag{identityFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErr("usage: kerf key [--identity DIR]")
			}
			dir, _ := identityDir(c)
			id, created, err := auth.LoadOrCreateClientIdentity(dir)
			if err != nil {
				// Its command line was fine (as a refused `kerf user`
				// command's): not a usage error.
				return transferErr(fmt.Errorf("cannot make or read the client key in %s: %w", dir, err))
			}
			if enc := jsonOutput(c); enc != nil {
				if abs, err := filepath.Abs(dir); err == nil {
					dir = abs
				}
				enc.Encode(jsonUserEvent{Event: "done", Fingerprint: id.Fingerprint, Identity: dir, Created: created})
				return nil
			}
			if created {
				fmt.Fprintf(os.Stderr, "kerf: created a client key in %s (keep key.pem private: it logs in as you)\n", dir)
			}
			fmt.Println(id.Fingerprint)
			name := os.Getenv("KERF_USER")
			if name == "" {
				name = "NAME"
			}
			fmt.Fprintf(os.Stderr, "kerf: to log in with it, run on the server: kerf user key add %s %s\n", name, id.Fingerprint)
			return nil
		},
	}
}

// clientKey is the key in the identity directory (and the directory),
// or nil when there is none. An unusable key (unreadable, or readable by
// others) is reported and not used; a missing one is an error only if
// the user named the directory.
func clientKey(c *cli.Context) (*auth.Identity, string, error) {
	dir, named := identityDir(c)
	id, err := auth.LoadClientIdentity(dir)
	switch {
	case err == nil:
		return id, dir, nil
	case errors.Is(err, os.ErrNotExist):
		if named {
			return nil, dir, credentialsErr("identity %s: no client key there (make one with `kerf key --identity %s`)", dir, dir)
		}
		return nil, dir, nil
	}
	fmt.Fprintf(os.Stderr, "kerf: not using the client key in %s: %v\n", dir, err)
	return nil, dir, nil
}
