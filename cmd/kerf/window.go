package main

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// modifyWindowFlag is rsync's --modify-window for a resume's quick
// check: a file here and there of one size whose times are at most this
// far apart is taken for the same. FAT keeps times in 2 s steps, so a
// --resume to or from one sent about half the files again.
func modifyWindowFlag() cli.Flag {
	return &cli.GenericFlag{
		Name:  "modify-window",
		Value: new(windowValue),
		Usage: "with --resume: take times at most this far apart for one (seconds, as rsync's, or a duration such as 500ms; 2 for FAT)",
	}
}

// modifyWindow is the --modify-window given, 0 if none.
func modifyWindow(c *cli.Context) time.Duration {
	if w, ok := c.Generic("modify-window").(*windowValue); ok && w != nil {
		return time.Duration(*w)
	}
	return 0
}

// checkModifyWindow refuses a --modify-window that would do nothing
// (no --resume: no times are compared), or would remove what it should
// not: with --remove-source-files a file rewritten within the window,
// its size the same, would be taken for the one there and removed
// (review 54).
func checkModifyWindow(c *cli.Context) error {
	if modifyWindow(c) == 0 {
		return nil
	}
	switch {
	case !c.Bool("resume"):
		return usageErr("--modify-window is for --resume's check of what is there already: give --resume too")
	case c.Bool(removeSourceFlag.Name):
		return usageErr("--modify-window with --remove-source-files: a file changed within the window, its size the same, would be taken for the one there and removed; leave one out")
	}
	return nil
}

// windowValue is a --modify-window: whole or decimal seconds, or a Go
// duration.
type windowValue time.Duration

func (w *windowValue) Set(s string) error {
	s = strings.TrimSpace(s)
	var d time.Duration
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if !(secs >= 0 && secs <= 1e9) { // (NaN too)
			return errors.New("want seconds from 0 to 1e9")
		}
		d = time.Duration(secs * float64(time.Second))
	} else if d, err = time.ParseDuration(s); err != nil {
		return errors.New("want seconds (2) or a duration (2s, 500ms)")
	} else if d < 0 {
		return errors.New("a window cannot be negative")
	}
	*w = windowValue(d)
	return nil
}

func (w *windowValue) String() string {
	if w == nil || *w == 0 {
		return ""
	}
	return time.Duration(*w).String()
}
