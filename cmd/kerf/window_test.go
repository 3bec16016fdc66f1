package main

import (
	"testing"

	"github.com/urfave/cli/v2"
)

// --modify-window takes seconds or a duration; it is refused where it
// would do nothing (no --resume) or remove what it should not (with
// --remove-source-files, review 54), and NaN is no number of seconds.
func TestModifyWindowFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--resume", "--modify-window", "2"}, true},
		{[]string{"--resume", "--modify-window", "1.5"}, true},
		{[]string{"--resume", "--modify-window", "500ms"}, true},
		{[]string{"--modify-window", "0"}, true},
		{[]string{"--modify-window", "2"}, false},
		{[]string{"--resume", "--remove-source-files", "--modify-window", "2"}, false},
		{[]string{"--resume", "--modify-window", "nan"}, false},
		{[]string{"--resume", "--modify-window", "-1"}, false},
		{[]string{"--resume", "--modify-window", "2X"}, false},
	} {
		app := &cli.App{
			Flags:  []cli.Flag{modifyWindowFlag(), &cli.BoolFlag{Name: "resume"}, removeSourceFlag},
			Action: checkModifyWindow,
		}
		app.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return err }
		if err := app.Run(append([]string{"kerf"}, c.args...)); (err == nil) != c.ok {
			t.Errorf("%q: %v; want ok %v", c.args, err, c.ok)
		}
	}
}
