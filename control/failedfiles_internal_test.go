package control

import (
	"fmt"
	"testing"

	"kerf/kermit"
)

// A session's end line names its first failed files, quoted where a
// name would read as two, counts the rest, and leaves out a file sent
// again whole (Event.Again).
func TestFailedFilesNamed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []kermit.Event
		want   string
	}{
		{"none", nil, ""},
		{"one", []kermit.Event{{Kind: kermit.FileFailed, Name: "a b.bin"}}, "a b.bin"},
		{"separator in a name", []kermit.Event{{Kind: kermit.FileFailed, Name: "x, y"}, {Kind: kermit.FileFailed, Name: "z"}}, `"x, y", z`},
		{"control character", []kermit.Event{{Kind: kermit.FileFailed, Name: "a\nb"}}, `"a\nb"`},
		{"bidi override", []kermit.Event{{Kind: kermit.FileFailed, Name: "x\u202egpj.exe"}}, `"x\u202egpj.exe"`},
		{"looks like the count", []kermit.Event{{Kind: kermit.FileFailed, Name: "b and 3 more"}}, `"b and 3 more"`},
		{"withdrawn", []kermit.Event{{Kind: kermit.FileFailed, Name: "a"}, {Kind: kermit.FileFailed, Name: "b"}, {Kind: kermit.FileDone, Name: "a", Again: true}}, "b"},
		{"done is no failure", []kermit.Event{{Kind: kermit.FileDone, Name: "a"}, {Kind: kermit.FileSkipped, Name: "s"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &failedFiles{}
			for _, e := range tc.events {
				f.note(e)
			}
			if got := f.String(); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
	f := &failedFiles{}
	for i := range 8 {
		f.note(kermit.Event{Kind: kermit.FileFailed, Name: fmt.Sprint("f", i)})
	}
	if got, want := f.String(), "f0, f1, f2, f3, f4 and 3 more"; got != want {
		t.Errorf("eight failed: %q, want %q", got, want)
	}
}
