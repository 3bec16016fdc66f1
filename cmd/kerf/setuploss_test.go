package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/kermit"
)

// A send whose session was lost while it made its destination (the
// server shutting down for a restart, its link cut) is begun again
// within --reconnect, its dial told to wait for the server; another
// refusal, or --reconnect 0, ends it at once.
func TestSetupLossBeginsAgain(t *testing.T) {
	stopping := &kermit.PeerError{Msg: kermit.ShuttingDown}
	for _, c := range []struct {
		name      string
		args      []string
		err       error
		wantCalls int
		wantErr   bool
	}{
		{"server stopping", nil, stopping, 2, false},
		{"link lost", nil, &kermit.LinkError{Op: "reading", Err: errors.New("connection reset by peer")}, 2, false},
		{"refused otherwise", nil, &kermit.PeerError{Msg: "permission denied"}, 1, true},
		{"no reconnect", []string{"--reconnect", "0"}, stopping, 1, true},
		// What a second run would not read again (review 54: a list
		// from standard input came back empty, and nothing was sent).
		{"files from standard input", []string{"--files-from", "-"}, stopping, 1, true},
		{"patterns from a pipe", []string{"--exclude-from", "/dev/stdin"}, stopping, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			var first time.Time
			action := againAfterSetupLoss(func(ctx *cli.Context) error {
				calls++
				until, again := redialing(ctx.Context)
				if again != (calls > 1) {
					t.Errorf("run %d: redialing %v", calls, again)
				}
				// The second run's dial waits within the first's
				// --reconnect, not one of its own (review 54 L6).
				if calls == 1 {
					first = time.Now()
				}
				if budget := ctx.Duration(reconnectFlag.Name); again && until.After(first.Add(budget)) {
					t.Errorf("run %d: dialling until %v, past the first run's %v", calls, until, budget)
				}
				if calls == 1 {
					return setupLoss(transferErr(fmt.Errorf("destination d: making it: %w", c.err)))
				}
				return nil
			})
			app := &cli.App{Flags: []cli.Flag{reconnectFlag, filesFromFlag, excludeFromFlag, &cli.StringFlag{Name: "password-file"}}, Action: action}
			err := app.Run(append([]string{"kerf"}, c.args...))
			if calls != c.wantCalls || (err != nil) != c.wantErr {
				t.Errorf("%d runs, error %v; want %d runs, an error: %v", calls, err, c.wantCalls, c.wantErr)
			}
		})
	}
}
