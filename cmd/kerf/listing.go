package main

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// jsonEntry is one line of a remote listing as a --json event.
type jsonEntry struct {
	Event    string `json:"event"` // "entry"
	Path     string `json:"path"`  // the remote path listed, as given
	Name     string `json:"name"`  // without the "/" that marks a directory
	Type     string `json:"type"`  // file, dir, symlink or other
	Mode     string `json:"mode"`  // as ls -l prints it
	Size     int64  `json:"size"`
	Modified string `json:"modified"` // RFC 3339, UTC
}

// jsonListing is a listing that is not in kerf's form (another Kermit
// server's), passed on whole.
type jsonListing struct {
	Event string `json:"event"` // "listing"
	Path  string `json:"path"`
	Text  string `json:"text"`
}

// listingLine is one line of a kerf server's listing (filestore.List):
// mode, size, UTC modification time, name.
var listingLine = regexp.MustCompile(`^([-dlpscb?][-rwxsStT]{9}) +(\d+) (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (.+)$`)

// parseListing reads a kerf server's listing of rpath. ok is false if
// any line is not in that form: then no entry is returned, as a
// half-parsed listing would silently drop names.
func parseListing(rpath, text string) (entries []jsonEntry, ok bool) {
	text = strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if text == "" {
		return nil, true
	}
	for _, line := range strings.Split(text, "\n") {
		m := listingLine.FindStringSubmatch(line)
		if m == nil {
			return nil, false
		}
		size, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return nil, false
		}
		mt, err := time.Parse(time.DateTime, m[3])
		if err != nil {
			return nil, false
		}
		mode, name := m[1], m[4]
		if strings.HasPrefix(name, `"`) {
			// A name the server quoted (filestore.listedName): exact
			// once unquoted, with a directory's "/" after the quotes.
			q, err := strconv.QuotedPrefix(name)
			if err != nil || name[len(q):] != "" && name[len(q):] != "/" {
				return nil, false
			}
			uq, _ := strconv.Unquote(q)
			name = uq + name[len(q):]
		}
		typ := "other"
		switch mode[0] {
		case '-':
			typ = "file"
		case 'd':
			typ = "dir"
			name = strings.TrimSuffix(name, "/")
		case 'l':
			typ = "symlink"
		}
		entries = append(entries, jsonEntry{Event: "entry", Path: rpath, Name: name, Type: typ, Mode: mode,
			Size: size, Modified: mt.UTC().Format(time.RFC3339)})
	}
	return entries, true
}
