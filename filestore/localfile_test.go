package filestore_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
)

// LocalFile reads as an os.File does, and once closed fails every call
// instead of reaching a descriptor reused by a later open.
func TestLocalFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	data := bytes.Repeat([]byte("0123456789"), 1000)
	if err := os.WriteFile(p, data, 0o640); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	os.Chtimes(p, when, when)
	f, err := filestore.OpenLocal(p)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("ReadAll: %d bytes, %v", len(all), err)
	}
	b := make([]byte, 15)
	if n, err := f.ReadAt(b, 9990); n != 10 || err != io.EOF || string(b[:n]) != "0123456789" {
		t.Fatalf("ReadAt at the end: %d %v %q", n, err, b[:n])
	}
	if pos, err := f.Seek(5, io.SeekStart); pos != 5 || err != nil {
		t.Fatalf("Seek: %d %v", pos, err)
	}
	if n, err := f.Read(b[:3]); n != 3 || err != nil || string(b[:3]) != "567" {
		t.Fatalf("Read after Seek: %d %v %q", n, err, b[:3])
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != int64(len(data)) || !fi.ModTime().Equal(when) || fi.Mode() != 0o640 || fi.Name() != "f" {
		t.Fatalf("Stat: %v %v", fi, err)
	}
	// OpenedStat is the file as opened; Stat asks again.
	later := when.Add(time.Hour)
	if err := os.WriteFile(p, append(data, 'x'), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, later, later)
	if o := f.OpenedStat(); o.Size() != int64(len(data)) || !o.ModTime().Equal(when) || o.Mode() != 0o640 || o.Name() != "f" {
		t.Fatalf("OpenedStat after a change: %d bytes, %v, %v, %q", o.Size(), o.ModTime(), o.Mode(), o.Name())
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(data))+1 || !fi.ModTime().Equal(later) {
		t.Fatalf("Stat after a change: %v %v", fi, err)
	}
	if f.File() == nil || f.File() != f.File() {
		t.Fatal("File: not one *os.File")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Another open may now have the same descriptor number.
	other, err := filestore.OpenLocal(p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := f.ReadAt(b, 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadAt after Close: %v", err)
	}
	if _, err := f.Read(b); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Stat after Close: %v", err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if _, err := filestore.OpenLocal(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenLocal of a missing file: %v", err)
	}
}

// Reads racing a Close (a resend request against the end of a file)
// each see the file or ErrClosed, never the other file opened at once
// after the Close, which likely gets the same descriptor number (go
// test -race).
func TestLocalFileCloseRace(t *testing.T) {
	dir := t.TempDir()
	p, q := filepath.Join(dir, "f"), filepath.Join(dir, "g")
	os.WriteFile(p, bytes.Repeat([]byte("k"), 4096), 0o644)
	os.WriteFile(q, bytes.Repeat([]byte("z"), 4096), 0o644)
	for range 50 {
		f, err := filestore.OpenLocal(p)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				b := make([]byte, 4096)
				for range 20 {
					n, err := f.ReadAt(b, 0)
					if err == nil && !bytes.Equal(b[:n], bytes.Repeat([]byte("k"), n)) {
						t.Error("read other bytes")
					}
					if err != nil && !errors.Is(err, os.ErrClosed) {
						t.Error(err)
					}
				}
			})
		}
		f.Close()
		other, err := filestore.OpenLocal(q)
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		other.Close()
	}
}
