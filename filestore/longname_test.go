package filestore_test

import (
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"kerf/filestore"
)

// longNames are names Linux allows (up to 255 bytes) whose ".NAME.kerf-part"
// would not fit: ASCII, and two-byte runes so that a cut at a fixed byte
// count would land inside a rune.
func longNames() []string {
	return []string{
		strings.Repeat("a", 245),
		strings.Repeat("b", 255),
		"x" + strings.Repeat("é", 127), // 255 bytes, runes at odd offsets
		strings.Repeat("€", 85),        // 255 bytes, three-byte runes
	}
}

// tempFiles lists the temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, name := range entries(t, dir) {
		if strings.HasSuffix(name, filestore.PartSuffix) {
			out = append(out, name)
		}
	}
	return out
}

// entries lists dir's names, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Names of 245-255 bytes are received: the temporary name is shortened
// to fit NAME_MAX, stays a hidden ".…kerf-part" name, and is the same
// for the same name, so a partial is found again for recovery.
func TestLongNameReceiveAndRecover(t *testing.T) {
	root := t.TempDir()
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range longNames() {
		in, err := d.Create("sub/" + name)
		if err != nil {
			t.Fatalf("Create(%d-byte name): %v", len(name), err)
		}
		in.WriteAt([]byte("partial"), 0)
		if err := in.Abort(true); err != nil {
			t.Fatal(err)
		}
		tmps := tempFiles(t, filepath.Join(root, "sub"))
		if len(tmps) != 1 {
			t.Fatalf("%d-byte name: temporary files %q, want one", len(name), tmps)
		}
		tmp := tmps[0]
		if len(tmp) > 255 || tmp[0] != '.' || !utf8.ValidString(tmp) {
			t.Errorf("temporary name %q (%d bytes): want a hidden, valid UTF-8 name of at most 255 bytes", tmp, len(tmp))
		}

		// Recovery finds the partial under the same temporary name.
		in, err = d.Create("sub/" + name)
		if err != nil {
			t.Fatal(err)
		}
		n, crc, err := in.Partial()
		if want := crc32.Checksum([]byte("partial"), crc32.MakeTable(crc32.Castagnoli)); err != nil || n != 7 || crc != want {
			t.Errorf("Partial of %d-byte name = %d, %08x, %v; want 7, %08x", len(name), n, crc, err, want)
		}
		in.WriteAt([]byte(" and the rest"), 7)
		// The temporary file is hidden from GET while it exists; DIR
		// shows it, and it cannot be deleted while it is received into.
		if files, err := d.Match("sub/*", false); err != nil || len(files) != 0 {
			t.Errorf("Match(sub/*) with only a temporary file = %v, %v", files, err)
		}
		parts := tempFiles(t, filepath.Join(root, "sub"))
		if l, err := d.List("sub"); err != nil || len(parts) != 1 || !strings.HasSuffix(l, " "+parts[0]+"\n") {
			t.Errorf("List(sub) with only a temporary file %q = %q, %v", parts, l, err)
		}
		if err := d.Remove("sub/" + parts[0]); !errors.Is(err, filestore.ErrBusy) {
			t.Errorf("Remove of a partial being received = %v, want ErrBusy", err)
		}
		if err := in.Commit(time.Time{}, 0o644); err != nil {
			t.Fatal(err)
		}
		checkFile(t, filepath.Join(root, "sub", name), "partial and the rest")
		if tmps := tempFiles(t, filepath.Join(root, "sub")); len(tmps) != 0 {
			t.Errorf("temporary files left: %q", tmps)
		}

		// Abort without keep removes the shortened temporary file.
		in, err = d.Create("sub/" + name)
		if err != nil {
			t.Fatal(err)
		}
		in.WriteAt([]byte("gone"), 0)
		if err := in.Abort(false); err != nil {
			t.Fatal(err)
		}
		if tmps := tempFiles(t, filepath.Join(root, "sub")); len(tmps) != 0 {
			t.Errorf("temporary files left after Abort: %q", tmps)
		}
		os.Remove(filepath.Join(root, "sub", name))
	}
}

// Two long names sharing their first 240 bytes get different temporary
// names; 244 bytes is the longest name whose temporary name is the
// ordinary one.
func TestLongNameTempNames(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	common := strings.Repeat("c", 240)
	a, err := d.Create(common + "-aaaaaaaaaaaa")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Abort(false)
	b, err := d.Create(common + "-bbbbbbbbbbbb")
	if err != nil {
		t.Fatalf("second name with the same long prefix: %v", err)
	}
	defer b.Abort(false)
	if tmps := tempFiles(t, root); len(tmps) != 2 {
		t.Errorf("temporary files %q, want two", tmps)
	}

	fits := strings.Repeat("f", 244)
	c, err := d.Create(fits)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort(false)
	if _, err := os.Stat(filepath.Join(root, "."+fits+filestore.PartSuffix)); err != nil {
		t.Errorf("a 244-byte name should keep the ordinary temporary name: %v", err)
	}
}

// A long name received twice in one batch: the second file waits for the
// first to be renamed, and wins.
func TestLongNameTwiceInBatch(t *testing.T) {
	root := t.TempDir()
	d, _ := filestore.Open(root)
	defer d.Close()
	name := strings.Repeat("é", 127)
	d.BeginBatch()
	receive(t, d, name, "first")
	receive(t, d, name, "second, longer")
	if err := d.EndBatch(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(root, name), "second, longer")
	if tmps := tempFiles(t, root); len(tmps) != 0 {
		t.Errorf("temporary files left: %q", tmps)
	}
}

// A name longer than a file name can be (256 bytes) is refused by Create,
// before any data, with nothing left behind: its temporary name would
// fit, its final name never.
func TestTooLongNameRefusedAtCreate(t *testing.T) {
	root := t.TempDir()
	d := openTree(t, root)
	for _, name := range []string{strings.Repeat("Q", 256), "sub/" + strings.Repeat("é", 128)} {
		if _, err := d.Create(name); err == nil || !strings.Contains(err.Error(), "file name too long") {
			t.Errorf("Create(%d bytes): %v; want a refusal naming the length", len(name), err)
		}
	}
	if tf := tempFiles(t, root); len(tf) != 0 {
		t.Errorf("left behind: %q", tf)
	}
}
