package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"kerf/filestore"
)

func TestParseListing(t *testing.T) {
	kerf := "drwxr-xr-x         4096 2024-05-06 07:08:09 sub dir/\n" +
		"-rw-r--r--            6 2024-05-06 07:08:10 a b.txt\n" +
		"lrwxrwxrwx           11 2024-05-06 07:08:11 link\n" +
		"prw-r--r--            0 2024-05-06 07:08:12 fifo\n" +
		"-rwsr-xr-x            1 2024-05-06 07:08:13 suid\n" +
		"drwxrwxrwt            0 2024-05-06 07:08:14 \"tab\\there\"/\n"
	ents, ok := parseListing("p", kerf)
	want := []jsonEntry{
		{"entry", "p", "sub dir", "dir", "drwxr-xr-x", 4096, "2024-05-06T07:08:09Z", ""},
		{"entry", "p", "a b.txt", "file", "-rw-r--r--", 6, "2024-05-06T07:08:10Z", ""},
		{"entry", "p", "link", "symlink", "lrwxrwxrwx", 11, "2024-05-06T07:08:11Z", ""},
		{"entry", "p", "fifo", "other", "prw-r--r--", 0, "2024-05-06T07:08:12Z", ""},
		{"entry", "p", "suid", "file", "-rwsr-xr-x", 1, "2024-05-06T07:08:13Z", ""},
		{"entry", "p", "tab\there", "dir", "drwxrwxrwt", 0, "2024-05-06T07:08:14Z", ""},
	}
	if !ok || len(ents) != len(want) {
		t.Fatalf("parseListing: %v %+v", ok, ents)
	}
	for i := range want {
		if ents[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, ents[i], want[i])
		}
	}
	if ents, ok := parseListing("", ""); !ok || len(ents) != 0 {
		t.Errorf("empty listing: %v %+v", ok, ents)
	}
	// Not kerf's form (C-Kermit's), a line that is no entry, a quoted
	// name with something after it: no entries.
	for _, text := range []string{
		" -rw-r--r--      6 2024-05-06 07:08:10 a.txt\n",
		kerf + "forged continuation\n",
		"-rw-r--r--            6 2024-05-06 07:08:10 \"a\"b\n",
		"-rw-r--r--            6 2024-05-06 07:08:10 \"a\n",
	} {
		if ents, ok := parseListing("", text); ok || ents != nil {
			t.Errorf("parseListing(%q) = %+v, %v; want not ok", text, ents, ok)
		}
	}
}

// What a kerf server lists, parseListing reads back exactly: every
// name, whatever it holds, and every kind of entry. A name with a
// newline followed by what looks like a listing line names one file,
// not two.
func TestListingRoundTrip(t *testing.T) {
	dir := t.TempDir()
	forged := "innocent\n-rw-r--r--          123 2020-01-01 00:00:00 important.db"
	files := map[string]string{ // name: type
		forged:        "file",
		`"quoted"`:    "file",
		"\xff\xfe":    "file",
		"a b.txt":     "file",
		" lead":       "file",
		"back\\slash": "file",
		"x.kerf-part": "file",
		"suid":        "file",
		"c1\u0085":    "file",
		"sticky dir":  "dir",
		"nl\ndir":     "dir",
		"fifo":        "other",
		"link":        "symlink",
	}
	for name, typ := range files {
		p := filepath.Join(dir, name)
		var err error
		switch typ {
		case "file":
			err = os.WriteFile(p, []byte("x"), 0o644)
		case "dir":
			err = os.Mkdir(p, 0o755)
		case "other":
			err = syscall.Mkfifo(p, 0o644)
		case "symlink":
			err = os.Symlink("a b.txt", p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "suid"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "sticky dir"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	// A receiver's temporary file is listed as it is.
	files[".a b.txt.kerf-part"] = "file"
	if err := os.WriteFile(filepath.Join(dir, ".a b.txt.kerf-part"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	text, err := d.List("")
	if err != nil {
		t.Fatal(err)
	}
	ents, ok := parseListing("", text)
	if !ok {
		t.Fatalf("listing not read:\n%s", text)
	}
	got := map[string]jsonEntry{}
	for _, e := range ents {
		got[e.Name] = e
	}
	if len(got) != len(files) {
		t.Errorf("%d entries, want %d:\n%s", len(got), len(files), text)
	}
	for name, typ := range files {
		e, ok := got[name]
		if !ok {
			t.Errorf("%q not listed", name)
			continue
		}
		if e.Type != typ {
			t.Errorf("%q listed as %s, want %s", name, e.Type, typ)
		}
		if _, err := time.Parse(time.RFC3339, e.Modified); err != nil {
			t.Errorf("%q: modified %q", name, e.Modified)
		}
	}
	if m := got["suid"].Mode; m != "-rwsr-xr-x" {
		t.Errorf("setuid file's mode %q", m)
	}
	if m := got["sticky dir"].Mode; m != "drwxrwxrwt" {
		t.Errorf("sticky directory's mode %q", m)
	}
}
