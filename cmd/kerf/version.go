package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// versionString says which kerf this is: the module version and, for a
// build from a checkout, the commit it was built from (and whether the
// tree had changes), so that a report of a fault names the code.
func versionString() string {
	v, rev, when, dirty := "(devel)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	out := v
	if rev != "" {
		short := rev[:min(12, len(rev))]
		if strings.Contains(v, short) || v == "(devel)" {
			out = short // the pseudo-version says no more than the commit
		} else {
			out += " " + short
		}
		if dirty {
			out += "+changes"
		}
		if when != "" {
			out += " " + when
		}
	}
	return fmt.Sprintf("%s %s %s/%s", out, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func init() {
	// -V as rsync, ssh and curl have it: -v means verbose to scp and
	// rsync users, and kerf has no such flag to confuse it with.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print kerf's version and exit"}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintf(c.App.Writer, "kerf %s\n", c.App.Version) }
}
