package main

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kerf/kermit"
)

func TestReadFilesFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		zero bool
		want []string
	}{
		{"lines", "a\nb/c\n", false, []string{"a", "b/c"}},
		{"no last line end", "a\nb", false, []string{"a", "b"}},
		{"CRLF and empty lines", "a\r\n\r\n\nb\r\n", false, []string{"a", "b"}},
		{"a byte order mark", "\uFEFFa\r\n\uFEFFb\r\n", false, []string{"a", "\uFEFFb"}},
		{"a CR inside a name stays", "a\rb\n", false, []string{"a\rb"}},
		{"spaces stay", " a \n", false, []string{" a "}},
		{"NUL-ended", "a\nb\x00c\r\x00\x00", true, []string{"a\nb", "c\r"}},
		{"empty", "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFilesFrom("-", strings.NewReader(tc.in), tc.zero)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := readFilesFrom(filepath.Join(t.TempDir(), "none"), nil, false); err == nil || exitCode(err) != 2 {
		t.Errorf("a missing list: %v (exit %d), want a usage error", err, exitCode(err))
	}
}

func TestListedSources(t *testing.T) {
	src, err := listedSources("base", []string{"a/b", "./c", "d/../e", "/abs/f", "/", ".", "g/"})
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{"base/a/b", "base/c", "base/e", "/abs/f", "/", "base", "base/g"}
	wantNames := []string{"a/b", "c", "e", "abs/f", "", "", "g"}
	if !slices.Equal(src.paths, wantPaths) || !slices.Equal(src.names, wantNames) {
		t.Errorf("paths %q names %q, want %q %q", src.paths, src.names, wantPaths, wantNames)
	}
	for _, bad := range []string{"..", "../x", "a/../../x"} {
		if _, err := listedSources("base", []string{"ok", bad}); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "entry 2") {
			t.Errorf("%q: %v, want a usage error naming entry 2", bad, err)
		}
	}
}

// A list's entries go under their paths: a directory without -r as a
// directory entry, with -r whole; a file named twice (also inside a
// listed tree) goes once; --exclude matches the whole path.
func TestListSourcesNames(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a/b/x", "a/y", "c/z", "top", "a/b/skip.o"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := func(files []kermit.OutgoingFile) (sent, dirs, failed []string) {
		for _, f := range files {
			switch {
			case f.Dir:
				dirs = append(dirs, f.Name)
			case f.Path == "":
				failed = append(failed, f.Name)
			default:
				sent = append(sent, f.Name)
			}
		}
		return
	}
	ex, err := kermit.ParseExclusions([]string{"*.o", "/c"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		entries   []string
		recursive bool
		sent      []string
		dirs      []string
		failed    []string
	}{
		{"files keep their paths", []string{"a/b/x", "top", "a/./b/x"}, false, []string{"a/b/x", "top"}, nil, nil},
		{"a directory without -r is made", []string{"a", "a/y", "."}, false, []string{"a/y"}, []string{"a"}, nil},
		{"a directory with -r goes whole", []string{"a", "a/y"}, true, []string{"a/b/x", "a/y"}, []string{"a", "a/b"}, nil},
		{"the list's directory with -r: its contents", []string{"."}, true, []string{"a/b/x", "a/y", "top"}, []string{"a", "a/b"}, nil},
		{"excluded by path", []string{"a/b/skip.o", "c/z", "top"}, false, []string{"top"}, nil, nil},
		{"missing", []string{"nope/x", "top"}, false, []string{"top"}, nil, []string{"nope/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := listedSources(dir, tc.entries)
			if err != nil {
				t.Fatal(err)
			}
			files, _, _, err := sourceFiles(src, tc.recursive, ex)
			if err != nil {
				t.Fatal(err)
			}
			sent, dirs, failed := names(files)
			slices.Sort(sent)
			slices.Sort(dirs)
			if !slices.Equal(sent, tc.sent) || !slices.Equal(dirs, tc.dirs) || !slices.Equal(failed, tc.failed) {
				t.Errorf("sent %q dirs %q failed %q; want %q %q %q", sent, dirs, failed, tc.sent, tc.dirs, tc.failed)
			}
			for _, f := range files {
				if f.Path != "" && f.Path != filepath.Join(dir, f.Name) {
					t.Errorf("%s read from %s, want %s", f.Name, f.Path, filepath.Join(dir, f.Name))
				}
			}
		})
	}
}

func TestListProbePairs(t *testing.T) {
	src, err := listedSources("base", []string{"a/b/x", "a/y", "top", "c", "/abs/f", "."})
	if err != nil {
		t.Fatal(err)
	}
	got := listProbePairs(src)
	want := []dirPair{{"base/a", "a"}, {"base", "."}, {"/abs", "abs"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// exitCode is the exit code err would give (0: none set).
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 0
}

// A path listed twice goes once; an absolute entry and a relative one of
// one name are both kept, and the walk refuses the second as a second
// file of that name; without -r no other name is remembered.
func TestListedSourcesRepeats(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	abs := filepath.Join(other, "f")
	same := filepath.Join(dir, strings.TrimPrefix(abs, "/"))
	for _, p := range []string{abs, same, filepath.Join(dir, "top")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := listedSources(dir, []string{"top", "./top", abs, strings.TrimPrefix(abs, "/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(src.paths) != 3 {
		t.Errorf("paths %q: want top once, then both of %s", src.paths, abs)
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(abs, "/"), "/")
	if want := map[string]bool{top: true}; !maps.Equal(src.clash, want) || !maps.Equal(overlappingTops(src, false), want) {
		t.Errorf("clash %v, overlapping tops %v; want %v", src.clash, overlappingTops(src, false), want)
	}
	files, _, _, err := sourceFiles(src, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sent, failed []string
	for _, f := range files {
		if f.Path != "" {
			sent = append(sent, f.Path)
		} else {
			failed = append(failed, f.Name)
		}
	}
	if !slices.Equal(sent, []string{filepath.Join(dir, "top"), abs}) || !slices.Equal(failed, []string{strings.TrimPrefix(abs, "/")}) {
		t.Errorf("sent %q, failed %q", sent, failed)
	}
}

// Whatever a list holds, an entry either is refused or goes under a
// name inside the destination: never absolute, never with a ".."
// element, and for a relative entry read from inside the directory.
func FuzzFilesFromList(f *testing.F) {
	for _, s := range []string{"a\nb/c\n", "../x\n", "/abs/f\r\n", ".\n./\n//\n", "a/../../b", "a\x00b\x00", "x/./y/..\n\n"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, list []byte, zero bool) {
		entries, err := readFilesFrom("-", strings.NewReader(string(list)), zero)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e == "" || (!zero && strings.ContainsRune(e, '\n')) {
				t.Fatalf("entry %q", e)
			}
		}
		src, err := listedSources("base", entries)
		if err != nil {
			if exitCode(err) != 2 {
				t.Fatalf("not a usage error: %v", err)
			}
			return
		}
		for i, name := range src.names {
			if strings.HasPrefix(name, "/") || name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "/../") || strings.HasSuffix(name, "/..") {
				t.Fatalf("name %q of %q", name, src.paths[i])
			}
			p := src.paths[i]
			switch {
			case filepath.IsAbs(p):
				if strings.TrimLeft(filepath.ToSlash(p), "/") != name {
					t.Fatalf("absolute %q named %q", p, name)
				}
			case name == "":
				if p != "base" {
					t.Fatalf("%q named as the directory itself", p)
				}
			case p != filepath.Join("base", name):
				t.Fatalf("%q named %q", p, name)
			}
		}
	})
}
