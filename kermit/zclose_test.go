package kermit_test

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// closeCounting counts Close calls on a FileReader.
type closeCounting struct {
	kermit.FileReader
	closed *atomic.Int32
}

func (c closeCounting) Close() error {
	c.closed.Add(1)
	return c.FileReader.Close()
}

// heldCommit holds a file's Commit until release is closed: its Z is
// not acknowledged meanwhile.
type heldCommit struct {
	kermit.Incoming
	committing chan struct{}
	release    chan struct{}
}

func (h heldCommit) Commit(time.Time, fs.FileMode) error {
	close(h.committing)
	<-h.release
	return errors.New("given up")
}

// A send that stops before its last file's Z was acknowledged (the
// receiver gone, the command cancelled) closes that file all the same:
// only the Z's ACK closed it, so a server whose GET clients were killed
// kept their files open until the garbage collector came (QA).
func TestSendStoppedBeforeZAckClosesTheFile(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"held.bin", randomBytes(200_000, 3)}})
	var closed atomic.Int32
	open := out[0].Open
	out[0].Open = func() (kermit.FileReader, error) {
		r, err := open()
		if err != nil {
			return nil, err
		}
		return closeCounting{r, &closed}, nil
	}
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// The receiver ends (its group's flush) before its store closes.
	received := make(chan struct{})
	defer func() { <-received }()
	committing, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	store := wrapStore{dir, func(in kermit.Incoming) kermit.Incoming { return heldCommit{in, committing, release} }}
	send, recv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), nil)
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	go func() {
		defer close(received)
		recv.Receive(rctx, store)
	}()
	sctx, scancel := context.WithCancel(context.Background())
	go func() {
		<-committing // the Z has arrived; its ACK waits on the commit
		scancel()
	}()
	if err := send.Send(sctx, out); err == nil {
		t.Fatal("a send stopped before its Z's ACK succeeded")
	}
	if n := closed.Load(); n != 1 {
		t.Errorf("the file was closed %d times when the send stopped, want once", n)
	}
}
