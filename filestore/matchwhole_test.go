package filestore_test

import (
	"os"
	"path/filepath"
	"testing"

	"kerf/filestore"
)

// Names with braces, alone or brace-quoted, GET as one name when that
// name exists.
func TestMatchWholeNamesWithBraces(t *testing.T) {
	root := t.TempDir()
	names := []string{"{braces}.txt", "a}b", "c{d e", "dir with space/{x}.txt", "p q"}
	for _, n := range names {
		os.MkdirAll(filepath.Dir(filepath.Join(root, n)), 0o755)
		if err := os.WriteFile(filepath.Join(root, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct{ spec, want string }{
		{"{braces}.txt", "{braces}.txt"},
		{"{{braces}.txt}", "{braces}.txt"},
		{"a}b", "a}b"},
		{"{c{d e}", "c{d e"},
		{"{dir with space/{x}.txt}", "{x}.txt"},
		{"{p q}", "p q"},
		{"p q", "p q"},
	} {
		files, err := d.Match(c.spec, false)
		if err != nil || len(files) != 1 || files[0].Name != c.want {
			t.Errorf("Match(%q) = %v, %v; want the one file %q", c.spec, files, err, c.want)
		}
	}
	// Two quoted names still give two files.
	if files, err := d.Match("{p q} {c{d e}", false); err != nil || len(files) != 2 {
		t.Errorf("Match of two quoted names = %d files, %v", len(files), err)
	}
}
