package main

import (
	"context"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// A command rerun with its flags first keeps the global flags and the
// parent commands' flags given before it.
func TestFlagsAfterNameKeepsEarlierFlags(t *testing.T) {
	var seen [][]string
	var gotQuiet []bool
	app := &cli.App{
		Name: "kerf",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}},
			&cli.StringFlag{Name: "log-level", Value: "warn"},
		},
		Commands: []*cli.Command{{
			Name:  "user",
			Flags: []cli.Flag{&cli.StringFlag{Name: "realm"}},
			Subcommands: []*cli.Command{{
				Name:  "add",
				Flags: []cli.Flag{&cli.StringFlag{Name: "root"}},
				Action: flagsAfterName(func(c *cli.Context) error {
					seen = append(seen, c.Args().Slice())
					gotQuiet = append(gotQuiet, c.Bool("quiet"))
					if c.String("log-level") != "debug" || c.String("realm") != "r" || c.String("root") != "/d" {
						t.Errorf("flags lost: log-level %q realm %q root %q", c.String("log-level"), c.String("realm"), c.String("root"))
					}
					return nil
				}),
			}},
		}},
	}
	for _, args := range [][]string{
		{"kerf", "-q", "--log-level", "debug", "user", "--realm", "r", "add", "alice", "--root", "/d"},
		{"kerf", "-q", "--log-level=debug", "user", "--realm=r", "add", "--root", "/d", "alice"},
	} {
		seen, gotQuiet = nil, nil
		if err := app.RunContext(context.Background(), args); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if len(seen) != 1 || !slices.Equal(seen[0], []string{"alice"}) || !gotQuiet[0] {
			t.Errorf("%q: action saw args %q, quiet %v", args, seen, gotQuiet)
		}
	}
}
