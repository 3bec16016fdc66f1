package kermit

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"errors"
	"fmt"
	"io/fs"
	"kerf/framing"
	"testing"
)

func TestPeerText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "removeat", Path: "nonexist.txt", Err: fs.ErrNotExist}, "nonexist.txt: file does not exist"},
		{fmt.Errorf("filestore: %w", &fs.PathError{Op: "statat", Path: "nonexist", Err: errors.New("no such file or directory")}), "nonexist: no such file or directory"},
		{fmt.Errorf("remote cd: filestore: %w", &fs.PathError{Op: "openat", Path: "a b/c", Err: errors.New("not a directory")}), "remote cd: a b/c: not a directory"},
		{errors.New("filestore: x exists and is not a directory"), "x exists and is not a directory"},
		{errors.New("the file open.txt is busy"), "the file open.txt is busy"},
		{fmt.Errorf("filestore: %w", &fs.PathError{Op: "statat", Path: "abslink", Err: errors.New("path escapes from parent")}), "abslink: refused: the path leads outside the directory (through a symbolic link or ..)"},
	} {
		if got := peerText(tc.err); got != tc.want {
			t.Errorf("peerText(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A message too long for the packet keeps its start and its end (the
// cause), whole characters, and fits; one that fits is sent as it is.
func TestFitMessage(t *testing.T) {
	long := "kerf: quarterly-reports-2026-final/approved-by-finance-department-2/" + strings.Repeat("é", 20) + "\x01#~: no space left on device"
	for _, q := range []framing.Quoting{{}, {QBIN: '&', REPT: '~'}} {
		for _, most := range []int{90, 40, 20} {
			data := fitMessage(&q, long, most)
			if len(data) > most {
				t.Errorf("%+v, %d: %d bytes", q.QBIN, most, len(data))
			}
			got, err := q.Decode(nil, data)
			if err != nil || !utf8.Valid(got) {
				t.Fatalf("%d: %q %v, want whole characters", most, got, err)
			}
			if !strings.HasPrefix(long, string(got[:bytes.Index(got, []byte("..."))])) || !strings.HasSuffix(long, string(got[bytes.Index(got, []byte("..."))+3:])) {
				t.Errorf("%d: %q is not the message's start and end", most, got)
			}
			if most >= 40 && !bytes.HasSuffix(got, []byte("no space left on device")) {
				t.Errorf("%d: %q lost the cause", most, got)
			}
		}
		if got, _ := q.Decode(nil, fitMessage(&q, "short #1", 90)); string(got) != "short #1" {
			t.Errorf("a message that fits came as %q", got)
		}
	}
}

// To a classic Kermit an E's text goes plain, as it shows it: printable
// characters as they are (no repeat counts, no doubled prefixes),
// controls as spaces, past ASCII as "?" over a 7-bit link; cut as any
// message is (QA s).
func TestPlainErrorText(t *testing.T) {
	for _, tc := range []struct {
		msg      string
		sevenBit bool
		most     int
		want     string
	}{
		{"kerf: a#b~c&d.txt: zzzz00000", false, 90, "kerf: a#b~c&d.txt: zzzz00000"},
		{"nl\nname\x01", false, 90, "nl name "},
		{"café", false, 90, "café"},
		{"café", true, 90, "caf??"},
		{"kerf: " + strings.Repeat("x", 100) + ": no space", false, 40, ""},
	} {
		got := string(fitMessage(plainText{sevenBit: tc.sevenBit}, tc.msg, tc.most))
		switch {
		case tc.want != "" && got != tc.want:
			t.Errorf("%q: %q, want %q", tc.msg, got, tc.want)
		case len(got) > tc.most:
			t.Errorf("%q: %d bytes, more than %d", tc.msg, len(got), tc.most)
		case tc.want == "" && (!strings.Contains(got, "...") || !strings.HasSuffix(got, "no space")):
			t.Errorf("%q cut to %q: want its start, ... and its end", tc.msg, got)
		}
	}
}
