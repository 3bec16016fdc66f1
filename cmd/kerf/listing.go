package main

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/framing"
)

// jsonEntry is one line of a remote listing as a --json event.
type jsonEntry struct {
	Event    string `json:"event"` // "entry"
	Path     string `json:"path"`  // the remote path listed, as given
	Name     string `json:"name"`  // without the "/" that marks a directory
	Type     string `json:"type"`  // file, dir, symlink or other
	Mode     string `json:"mode"`  // as ls -l prints it
	Size     int64  `json:"size"`
	Modified string `json:"modified"` // RFC 3339, UTC, with the fraction of a second a kerf server gives
	// NameBase64: the exact name when it is not UTF-8 (exactName).
	NameBase64 string `json:"name_base64,omitempty"`
}

// jsonListing is a listing that is not in kerf's form (another Kermit
// server's), passed on whole.
type jsonListing struct {
	Event string `json:"event"` // "listing"
	Path  string `json:"path"`
	Text  string `json:"text"`
}

// parseListing reads a kerf server's listing of rpath. ok is false if
// any line is not in that form: then no entry is returned, as a
// half-parsed listing would silently drop names.
func parseListing(rpath, text string) (entries []jsonEntry, ok bool) {
	list, err := framing.ParseListing(text)
	if err != nil {
		return nil, false
	}
	for _, e := range list {
		entries = append(entries, jsonEntryOf(rpath, e))
	}
	return entries, true
}

// jsonEntryOf is e, of the listing of rpath, as a --json event.
func jsonEntryOf(rpath string, e framing.ListingEntry) jsonEntry {
	typ := "other"
	switch {
	case e.Mode.IsRegular():
		typ = "file"
	case e.Mode.IsDir():
		typ = "dir"
	case e.Mode&fs.ModeSymlink != 0:
		typ = "symlink"
	}
	return jsonEntry{Event: "entry", Path: rpath, Name: e.Name, Type: typ, Mode: framing.ModeString(e.Mode),
		Size: e.Size, Modified: e.ModTime.UTC().Format(time.RFC3339Nano), NameBase64: exactName(e.Name)}
}

// listingOut prints the listing of one path of ls as its entries come
// (QA w: ls of 500,000 entries printed nothing until all had come, and
// held them all: 281-325 MB), through one buffer: a line each, as ls -l
// shows it (times to the second), or a --json event each.
type listingOut struct {
	rpath    string
	w        *bufio.Writer
	enc      *json.Encoder // with --json
	head     string        // said before the first line: several paths' names, as ls says them
	entries  int
	problems []framing.ListingProblem // ls -R's, said after the rest
	line     []byte
}

func newListingOut(c *cli.Context, rpath string, several, notFirst bool) *listingOut {
	o := &listingOut{rpath: rpath, w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	if c.Bool("json") {
		o.enc = json.NewEncoder(o.w)
	} else if several {
		if notFirst {
			o.head = "\n"
		}
		o.head += printable(rpath) + ":\n"
	}
	return o
}

// said writes the path's heading, once, before what is said of it.
func (o *listingOut) said() {
	o.w.WriteString(o.head)
	o.head = ""
}

func (o *listingOut) entry(e framing.ListingEntry) error {
	o.said()
	o.entries++
	if o.enc != nil {
		return o.enc.Encode(jsonEntryOf(o.rpath, e))
	}
	o.line = framing.AppendListingLine(o.line[:0], e)
	_, err := o.w.WriteString(printable(string(o.line[:len(o.line)-1])) + "\n")
	return err
}

// other says a line of a kerf server's listing that is not in its form
// as it came: a line of text, or a --json listing event of it.
func (o *listingOut) other(line string) error {
	o.said()
	if o.enc != nil {
		return o.enc.Encode(jsonListing{Event: "listing", Path: o.rpath, Text: line + "\n"})
	}
	_, err := o.w.WriteString(printable(line) + "\n")
	return err
}

func (o *listingOut) problem(p framing.ListingProblem) error {
	o.problems = append(o.problems, p)
	return nil
}

// text says a listing that came whole as text (another Kermit server's,
// in its own form), and the heading of a listing that came empty.
func (o *listingOut) text(reply string) {
	o.said()
	switch {
	case reply == "":
	case o.enc != nil:
		if entries, ok := parseListing(o.rpath, reply); ok {
			for _, e := range entries {
				o.enc.Encode(e)
			}
		} else {
			o.enc.Encode(jsonListing{Event: "listing", Path: o.rpath, Text: reply})
		}
	default:
		o.w.WriteString(printableLines(listingText(reply)))
	}
}

func (o *listingOut) flush() { o.w.Flush() }
