package kermit_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/kermit"
)

// A recursive transfer between kerf peers keeps its directories'
// permissions and modification times, given once the group is in (the
// files renamed into a directory would change its time, and a read-only
// one would not take them). Against a kerf without the feature only the
// empty directories travel, and the files make the others.
func TestDirectoryAttributes(t *testing.T) {
	src := t.TempDir()
	when := time.Date(2020, 2, 3, 4, 5, 6, 0, time.UTC)
	type dir struct {
		name   string
		mode   os.FileMode
		filled bool
	}
	dirs := []dir{{"top", 0o750, true}, {"top/private", 0o700, true}, {"top/ro", 0o555, true}, {"top/empty", 0o711, false}}
	var out []kermit.OutgoingFile
	for i, d := range dirs {
		out = append(out, kermit.OutgoingFile{Name: d.name, Dir: true, Filled: d.filled,
			ModTime: when.Add(time.Duration(i) * time.Hour), Mode: d.mode, ModeKnown: true})
		if d.filled {
			p := filepath.Join(src, filepath.Base(d.name))
			if err := os.WriteFile(p, []byte(d.name), 0o644); err != nil {
				t.Fatal(err)
			}
			out = append(out, kermit.OutgoingFile{Name: d.name + "/f", Size: int64(len(d.name)), Mode: 0o644,
				Open: func() (kermit.FileReader, error) { return os.Open(p) }})
		}
	}
	for _, old := range []bool{false, true} {
		name := "both keep directory attributes"
		if old {
			name = "receiver from before them"
		}
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			rcfg := kermit.DefaultConfig()
			if old {
				rcfg = kermit.WithoutDirAttrs(rcfg)
			}
			a, b := link(t, 0, 1)
			serr, rerr, _ := transfer(t, a, b, kermit.DefaultConfig(), rcfg, out, dst)
			if serr != nil || rerr != nil {
				t.Fatalf("send: %v, receive: %v", serr, rerr)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(dst, "top/ro"), 0o755) })
			for i, d := range dirs {
				fi, err := os.Stat(filepath.Join(dst, d.name))
				if err != nil {
					t.Fatalf("%s: %v", d.name, err)
				}
				if d.filled {
					if b, err := os.ReadFile(filepath.Join(dst, d.name, "f")); err != nil || string(b) != d.name {
						t.Errorf("%s/f = %q, %v", d.name, b, err)
					}
				}
				wantTime := when.Add(time.Duration(i) * time.Hour)
				if old {
					// Made by its files, or as an empty directory: the
					// receiver's own mode and time.
					if fi.Mode().Perm() == d.mode && d.mode != 0o755 || fi.ModTime().Equal(wantTime) {
						t.Errorf("%s: mode %v, time %v: an old receiver kept attributes it was never sent", d.name, fi.Mode().Perm(), fi.ModTime())
					}
					continue
				}
				if fi.Mode().Perm() != d.mode || !fi.ModTime().Equal(wantTime) {
					t.Errorf("%s: mode %v, time %v; want %v, %v", d.name, fi.Mode().Perm(), fi.ModTime().UTC(), d.mode, wantTime)
				}
			}
		})
	}
}
