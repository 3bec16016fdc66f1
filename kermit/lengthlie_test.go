package kermit_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"kerf/kermit"
)

// lyingReader is a file whose size says less than it holds (a /proc
// file says 0): ReadAt as a file, and Stat-less, so no change is seen.
type lyingReader struct{ *bytes.Reader }

func (lyingReader) Close() error { return nil }

// A file in packets that holds more than its size said (/proc/version:
// size 0, 125 bytes) fails alone, said as such, and the group goes on:
// the sender finds it so; a kerf sender from before that check is
// caught by the receiver's length check, which now fails that file only
// (QA: it ended the transfer, "2 file(s) not sent").
func TestFileLongerThanItsSizeFailsAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  bool
		want string
	}{
		{"sender finds it", false, "held 125 bytes where its size said 0"},
		{"receiver finds it", true, "received 125 bytes, sender announced 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, []testFile{{"first.bin", randomBytes(7000, 1)}, {"steady.bin", randomBytes(5000, 8)}})
			procData := randomBytes(125, 9)
			version := kermit.OutgoingFile{Name: "version", Size: 0, Open: func() (kermit.FileReader, error) {
				return lyingReader{bytes.NewReader(procData)}, nil
			}}
			files := []kermit.OutgoingFile{out[0], version, out[1]}
			scfg := kermit.DefaultConfig()
			if tc.old {
				scfg = kermit.WithoutLengthCheck(scfg)
			}
			var log eventLog
			scfg.Events = log.add
			serr, rerr := transferEitherInto(t, false, scfg, kermit.DefaultConfig(), files, dst)
			var ge *kermit.GroupError
			if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "version" {
				t.Fatalf("send: %v; want a group error naming version only", serr)
			}
			if rerr != nil {
				t.Fatalf("receive: %v", rerr)
			}
			why := log.failures()
			if len(why) != 1 || !strings.Contains(why[0], tc.want) {
				t.Errorf("failures reported: %q; want one saying %q", why, tc.want)
			}
			checkFiles(t, dst, []testFile{{"first.bin", randomBytes(7000, 1)}, {"steady.bin", randomBytes(5000, 8)}})
		})
	}
}

var _ io.ReaderAt = lyingReader{}

// eioReader is a file whose reads fail with EIO from byte at on, as a
// failing disk's.
type eioReader struct {
	*bytes.Reader
	at int64
}

func (r eioReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.at {
		return 0, &fs.PathError{Op: "read", Path: "/srv/x", Err: syscall.EIO}
	}
	return r.Reader.ReadAt(p, off)
}

func (r eioReader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.Size()-int64(r.Len()))
	r.Reader.Seek(int64(n), io.SeekCurrent)
	return n, err
}

func (eioReader) Close() error { return nil }

// A file whose reads fail as it is sent on the data channel fails alone,
// and the sender logs why, with the cause, for a server's operator (its
// log raises a storage error to warn: QA ar, a failing disk was told to
// the client and logged at info with no cause).
func TestReadFailureLoggedWithItsCause(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"steady.bin", randomBytes(5000, 8)}})
	data := randomBytes(3<<20, 9)
	bad := kermit.OutgoingFile{Name: "bad.bin", Size: int64(len(data)), Open: func() (kermit.FileReader, error) {
		return eioReader{bytes.NewReader(data), 2 << 20}, nil
	}}
	scfg := kermit.DefaultConfig()
	var logged syncBuf
	scfg.Log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	serr, _ := transferEitherInto(t, true, scfg, kermit.DefaultConfig(), []kermit.OutgoingFile{bad, out[0]}, dst)
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "bad.bin" {
		t.Fatalf("send: %v; want a group error naming bad.bin only", serr)
	}
	if !strings.Contains(logged.String(), "reading it failed") || !strings.Contains(logged.String(), "input/output error") {
		t.Errorf("log:\n%s\nwant the read failure with its cause", logged.String())
	}
}
