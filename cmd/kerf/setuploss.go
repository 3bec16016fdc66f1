package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/kermit"
)

// setupLost marks the failure of a send's first steps (its destination
// made and entered), before any file moved, because the session was
// lost: its link, or the server shutting down (a restart). The command
// is begun again within --reconnect (againAfterSetupLoss), as a loss
// once files move is followed by a successor (QA af: a server restarted
// in a client's first 0.3 s ended the client, exit 4).
type setupLost struct{ err error }

func (e *setupLost) Error() string { return e.err.Error() }
func (e *setupLost) Unwrap() error { return e.err }

// setupLoss is err marked setupLost if it is such a loss.
func setupLoss(err error) error {
	var le *kermit.LinkError
	var pe *kermit.PeerError
	if errors.As(err, &le) || errors.As(err, &pe) && pe.Msg == kermit.ShuttingDown {
		return &setupLost{err}
	}
	return err
}

type redialKey struct{}

// redialing reports whether the command runs again after a setupLost,
// and until when: its dial waits for a server that refuses connections
// for a moment, within the first run's --reconnect (review 54: each run
// had a budget of its own, about twice the time in all).
func redialing(ctx context.Context) (time.Time, bool) {
	v, ok := ctx.Value(redialKey{}).(time.Time)
	return v, ok
}

// againAfterSetupLoss runs action, and again while it fails with
// setupLost, within --reconnect: after 1 s, then twice as long each
// time, at most 5 s apart. Nothing has moved then, so the whole command
// is begun again.
func againAfterSetupLoss(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		ctx := c.Context
		defer func() { c.Context = ctx }()
		deadline := time.Now().Add(c.Duration(reconnectFlag.Name))
		wait := reconnectWait
		for {
			err := action(c)
			var lost *setupLost
			if !errors.As(err, &lost) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) || !rerunnable(c) {
				return err
			}
			writeNote(fmt.Sprintf("kerf: %s; no file had moved: beginning again in %v\n", printable(err.Error()), wait))
			if enc := jsonOutput(c); enc != nil {
				enc.Encode(jsonEvent{Event: "reconnecting", Error: err.Error(), Seconds: wait.Seconds()})
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
			wait = min(2*wait, 5*time.Second)
			c.Context = context.WithValue(ctx, redialKey{}, deadline)
		}
	}
}

// rerunnable reports whether the command reads nothing that a second
// run would not find again: a list or patterns from standard input or a
// pipe (--files-from -, --exclude-from <(...)) would come back empty,
// and a send of nothing, or of what was to be left out, would follow
// (review 54). Only regular files, read again the same, are.
func rerunnable(c *cli.Context) bool {
	// Lists, patterns and the password: regular files only.
	for _, p := range append([]string{c.String("files-from"), c.String("password-file")}, c.StringSlice("exclude-from")...) {
		if fi, err := os.Stat(p); p == "-" || p != "" && (err != nil || !fi.Mode().IsRegular()) {
			return false
		}
	}
	// The sources (the last argument is the destination): no standard
	// input, no pipe.
	for _, a := range c.Args().Slice()[:max(c.NArg()-1, 0)] {
		if a == "-" || streamed(a) != "" {
			return false
		}
	}
	return true
}
