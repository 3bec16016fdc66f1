package control

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/kermit"
)

func TestXferLogGoldenLine(t *testing.T) {
	var buf bytes.Buffer
	l := NewXferLog(&buf)
	err := l.Write(XferEntry{
		Time:       time.Date(2026, 11, 9, 22, 8, 36, 0, time.UTC),
		Duration:   2400 * time.Millisecond,
		RemoteHost: "192.0.2.7:50122",
		Bytes:      1048576,
		Name:       "/backup/photos/my holiday.jpg",
		User:       "alice",
		Complete:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = "Mon Nov  9 22:08:36 2026 2 192.0.2.7 1048576 /backup/photos/my_holiday.jpg b _ i r alice kerf 0 * c\n"
	if got := buf.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Format characters (bidirectional overrides, zero-width ones) are
// replaced as spaces and controls are: a log reader's terminal shows
// the name as it is.
func TestXferLogFieldFormatCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"invoice\u202Efdp.exe": "invoice_fdp.exe",
		"a\u200Bb":             "a_b",
		"tab\there":            "tab_here",
		"naïve.txt":            "naïve.txt",
	} {
		if got := field(in); got != want {
			t.Errorf("field(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestXferLogRecordEvents(t *testing.T) {
	var buf bytes.Buffer
	l := NewXferLog(&buf)
	l.Now = func() time.Time { return time.Date(2026, 1, 31, 3, 4, 5, 0, time.UTC) }
	events := []kermit.Event{
		{Kind: kermit.FileStart, Name: "ignored"},
		{Kind: kermit.FileProgress, Name: "ignored", Bytes: 5},
		{Kind: kermit.FileDone, Name: "été/a\tb", Bytes: 0, Duration: 10 * time.Millisecond, Sending: true},
		{Kind: kermit.FileFailed, Name: "big.iso", Bytes: 4096, Duration: 90 * time.Second, Err: errors.New("x")},
		{Kind: kermit.FileSkipped, Name: "c", Sending: true},
		// Received: logged once verified, under its path; its saving
		// adds nothing, a failure to save it a line of its own.
		{Kind: kermit.FileDone, Name: "d.bin", Bytes: 7, Path: "in/d.bin"},
		{Kind: kermit.FileSaved, Name: "d.bin", Bytes: 7, Path: "in/d.bin"},
		{Kind: kermit.FileDone, Name: "e.bin", Bytes: 3, Path: "in/e.bin"},
		{Kind: kermit.FileFailed, Name: "e.bin", Path: "in/e.bin", Err: fmt.Errorf("%w: rename: no space", kermit.ErrNotSaved)},
		// Sent and not confirmed saved by the client: its own business.
		{Kind: kermit.FileFailed, Name: "f.bin", Sending: true, Err: kermit.ErrNotSaved},
		// A resume found it whole: nothing moved, no line.
		{Kind: kermit.FileSkipped, Name: "w", Err: kermit.ErrAlreadyThere},
		// Resumed with ranges the receiver kept: they did not move.
		{Kind: kermit.FileDone, Name: "g.bin", Bytes: 10, Kept: 4, Sending: true, Path: "g.bin"},
	}
	for _, e := range events {
		if err := l.Record(e, "2001:db8::1", ""); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join([]string{
		"Sat Jan 31 03:04:05 2026 1 2001:db8::1 0 été/a_b b _ o a anonymous kerf 0 * c",
		"Sat Jan 31 03:04:05 2026 90 2001:db8::1 4096 big.iso b _ i a anonymous kerf 0 * i",
		"Sat Jan 31 03:04:05 2026 1 2001:db8::1 0 c b _ o a anonymous kerf 0 * i",
		"Sat Jan 31 03:04:05 2026 1 2001:db8::1 7 /in/d.bin b _ i a anonymous kerf 0 * c",
		"Sat Jan 31 03:04:05 2026 1 2001:db8::1 3 /in/e.bin b _ i a anonymous kerf 0 * c",
		"Sat Jan 31 03:04:05 2026 1 2001:db8::1 0 /in/e.bin b _ i a anonymous kerf 0 * i",
		"Sat Jan 31 03:04:05 2026 1 2001:db8::1 6 /g.bin b _ o a anonymous kerf 0 * c",
	}, "\n") + "\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		// 5 words of current-time + 13 more fields.
		if n := len(strings.Fields(line)); n != 18 {
			t.Errorf("line %d has %d fields, want 18: %q", i, n, line)
		}
	}
}

func TestXferLogTextAndService(t *testing.T) {
	var buf bytes.Buffer
	l := NewXferLog(&buf)
	l.Service = "kerf serial"
	l.Write(XferEntry{Time: time.Date(2026, 12, 25, 0, 0, 0, 0, time.UTC), Text: true, Name: "", User: "bob smith", Bytes: -1})
	const want = "Fri Dec 25 00:00:00 2026 1 - 0 - a _ i r bob_smith kerf_serial 0 * i\n"
	if got := buf.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Lines written concurrently never interleave.
func TestXferLogConcurrent(t *testing.T) {
	var buf bytes.Buffer
	l := NewXferLog(&buf)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Go(func() {
			for j := 0; j < 50; j++ {
				l.Record(kermit.Event{Kind: kermit.FileDone, Name: "f", Bytes: 1}, "h", "u")
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1000 {
		t.Fatalf("%d lines, want 1000", len(lines))
	}
	for _, line := range lines {
		if !strings.HasSuffix(line, " 1 f b _ i r u kerf 0 * c") {
			t.Fatalf("bad line %q", line)
		}
	}
}
