package filestore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kerf/filestore"
	"kerf/kermit"
)

// MatchWalk leaves out what keep refuses while it walks, and gives
// the entries it keeps, directories and their Filled marks included,
// exactly as Match's listing filtered afterwards would: a directory
// whose files all went to other shares is still not an empty one.
func TestMatchWalkKeepsAsMatchThenFiltered(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"t/a/1", "t/a/2", "t/a/3", "t/b/x", "t/c/d/4", "t/c/d/5", "t/e/6", "t/7"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "t/empty"), 0o755)
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	full, err := d.Match("t", true)
	if err != nil {
		t.Fatal(err)
	}
	keeps := map[string]func(string) bool{
		"odd names":  func(n string) bool { return strings.ContainsAny(n[len(n)-1:], "1357") },
		"none":       func(string) bool { return false },
		"all":        func(string) bool { return true },
		"only t/b/x": func(n string) bool { return n == "t/b/x" },
	}
	for what, keep := range keeps {
		t.Run(what, func(t *testing.T) {
			var want []kermit.OutgoingFile
			for _, f := range full {
				if f.Dir || keep(f.Name) {
					want = append(want, f)
				}
			}
			var got []kermit.OutgoingFile
			left, err := d.MatchWalk("t", true, keep, func(f kermit.OutgoingFile) bool {
				got = append(got, f)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if left != len(full)-len(want) {
				t.Errorf("left out %d, want %d", left, len(full)-len(want))
			}
			if len(got) != len(want) {
				t.Fatalf("kept %d entries, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].Name != want[i].Name || got[i].Dir != want[i].Dir || got[i].Filled != want[i].Filled {
					t.Errorf("entry %d: %s dir %v filled %v; want %s dir %v filled %v",
						i, got[i].Name, got[i].Dir, got[i].Filled, want[i].Name, want[i].Dir, want[i].Filled)
				}
			}
		})
	}
	// And the whole listing marks a directory filled by its contents, and
	// an empty one not.
	for _, f := range full {
		if f.Dir && f.Filled != (f.Name != "t/empty") {
			t.Errorf("%s: filled %v", f.Name, f.Filled)
		}
	}
}

// MatchWalk hands out the same entries as Match's listing, in its order,
// with Filled marked by MarkFilled's rule, and stops as soon as yield
// says so: a GET that ends part-way walks no further. A directory named
// as kerf's partials is passed over with what is under it.
func TestMatchWalkStopsWhenTold(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"t/a/1", "t/a/2", "t/b/x", "t/c/d/4", "t/c/e/5", "t/7"} {
		p := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(f), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "t/c/empty"), 0o755)
	os.MkdirAll(filepath.Join(root, "t/z/last"), 0o755)
	// Named as a partial: passed over, and what is under it (QA: its
	// entry was refused and its file stored).
	os.MkdirAll(filepath.Join(root, "t/c/.p.kerf-part"), 0o755)
	os.WriteFile(filepath.Join(root, "t/c/.p.kerf-part/inner"), []byte("x"), 0o644)
	d, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	full, err := d.Match("t", true)
	if err != nil {
		t.Fatal(err)
	}
	marked := make([]kermit.OutgoingFile, len(full))
	for i, f := range full {
		f.Filled = false
		marked[i] = f
	}
	filestore.MarkFilled(marked)
	for i := range full {
		if full[i].Name != marked[i].Name || full[i].Filled != marked[i].Filled {
			t.Errorf("entry %d: %s filled %v; MarkFilled says %v", i, full[i].Name, full[i].Filled, marked[i].Filled)
		}
	}
	if n := len(full); n != 15 {
		t.Fatalf("%d entries, want 15", n)
	}
	for _, f := range full {
		if strings.Contains(f.Name, "kerf-part") {
			t.Errorf("%s listed", f.Name)
		}
	}
	for k := 1; k <= len(full); k++ {
		var got []kermit.OutgoingFile
		_, err := d.MatchWalk("t", true, nil, func(f kermit.OutgoingFile) bool {
			got = append(got, f)
			return len(got) < k
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != k {
			t.Fatalf("told to stop after %d entries, got %d", k, len(got))
		}
		for i := range got {
			if got[i].Name != full[i].Name || got[i].Filled != full[i].Filled {
				t.Errorf("stop at %d: entry %d is %s filled %v, want %s filled %v", k, i, got[i].Name, got[i].Filled, full[i].Name, full[i].Filled)
			}
		}
	}
}
