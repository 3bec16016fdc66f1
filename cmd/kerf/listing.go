package main

import (
	"io/fs"
	"time"

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
		typ := "other"
		switch {
		case e.Mode.IsRegular():
			typ = "file"
		case e.Mode.IsDir():
			typ = "dir"
		case e.Mode&fs.ModeSymlink != 0:
			typ = "symlink"
		}
		entries = append(entries, jsonEntry{Event: "entry", Path: rpath, Name: e.Name, Type: typ, Mode: framing.ModeString(e.Mode),
			Size: e.Size, Modified: e.ModTime.UTC().Format(time.RFC3339Nano), NameBase64: exactName(e.Name)})
	}
	return entries, true
}
