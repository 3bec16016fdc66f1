package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst rewrites a command line so that flags given after the
// arguments work, as rsync and GNU tools allow: `kerf send a.txt
// host/dir --resume`, `kerf user add NAME --root DIR`. The cli package
// stops reading flags at the first argument, which made the flag a
// host or a file name. A global flag given after the command (`kerf
// send --json ...`) moves before it. Everything after "--" stays an
// argument. The command's flags keep their order, and so do the
// arguments.
func flagsFirst(app *cli.App, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	// cli completes only with this flag last: it stays there.
	var tail []string
	if n := len(args); args[n-1] == "--generate-bash-completion" {
		args, tail = args[:n-1], args[n-1:]
	}
	var global, path, names, flags, plain []string
	dashdash := false
	i := 1
	// takeFlag moves args[i], and its value if it takes one, to *to.
	takeFlag := func(to *[]string, defined []cli.Flag) error {
		a := args[i]
		*to = append(*to, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && takesValue(defined, name) {
			if i+1 == len(args) {
				// Moved first, it would take an argument for its value.
				return usageErr("flag needs an argument: %s (see %s --help)", a, strings.Join(append([]string{app.Name}, names...), " "))
			}
			i++
			*to = append(*to, args[i])
		}
		return nil
	}
	// moveFlag moves a flag of cmdFlags to *to, and a global one
	// (--json, -q, ...) before the command.
	moveFlag := func(to *[]string, cmdFlags []cli.Flag) error {
		name := flagName(args[i])
		if !definedIn(cmdFlags, name) && definedIn(app.Flags, name) {
			return takeFlag(&global, app.Flags)
		}
		return takeFlag(to, cmdFlags) // the command's own, or unknown: cli says which
	}
	isFlag := func(a string) bool { return len(a) > 1 && a[0] == '-' }
	for i < len(args) && isFlag(args[i]) && args[i] != "--" {
		if err := takeFlag(&global, app.Flags); err != nil {
			return nil, err
		}
		i++
	}
	// The command path, with any flags given on the way.
	cmds := app.Commands
	var leaf *cli.Command
	for i < len(args) {
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(args[i]) {
				next = c
			}
		}
		if next == nil {
			break
		}
		leaf = next
		path = append(path, args[i])
		names = append(names, args[i])
		i++
		cmds = leaf.Subcommands
		for len(cmds) > 0 && i < len(args) && isFlag(args[i]) && args[i] != "--" {
			if err := moveFlag(&path, leaf.Flags); err != nil {
				return nil, err
			}
			i++
		}
	}
	if leaf == nil {
		return append(args, tail...), nil // no command (help, an unknown one): as given
	}
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case dashdash || !isFlag(a):
			plain = append(plain, a)
		case a == "--":
			dashdash = true
		default:
			if err := moveFlag(&flags, leaf.Flags); err != nil {
				return nil, err
			}
		}
	}
	if slices.ContainsFunc(flags, func(f string) bool { return flagName(f) == "help" || flagName(f) == "h" }) {
		// cli would take the first argument for a help topic ("No help
		// topic for '/'"): --help is about the command.
		plain = nil
	}
	out := append([]string{args[0]}, global...)
	out = append(append(out, path...), flags...)
	for _, p := range plain {
		if isFlag(p) {
			// A name that looks like a flag came after "--".
			out = append(out, "--")
			break
		}
	}
	return append(append(out, plain...), tail...), nil
}

func flagName(a string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

// findFlag returns the flag among flags called name (by any of its
// names), or nil.
func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func definedIn(flags []cli.Flag, name string) bool { return findFlag(flags, name) != nil }

// takesValue reports whether the flag called name among flags takes a
// value (every flag but a boolean one).
func takesValue(flags []cli.Flag, name string) bool {
	f := findFlag(flags, name)
	_, isBool := f.(*cli.BoolFlag)
	return f != nil && !isBool
}

// commandPath is the command line up to c's command: "kerf user key
// add", for messages.
func commandPath(c *cli.Context) []string {
	// The root command has two contexts (cli's App.RunContext makes a
	// bare one first): a command is named once.
	var names []string
	seen := map[*cli.Command]bool{}
	for _, x := range c.Lineage() {
		if x.Command == nil || seen[x.Command] {
			continue
		}
		seen[x.Command] = true
		names = append(names, x.Command.Name)
	}
	slices.Reverse(names)
	if len(names) > 0 {
		names[0] = c.App.Name // the root command is the app
	}
	return names
}
