package kermit_test

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A serial server whose answer to a REMOTE command came damaged is NAKed
// for it by a classic client (C-Kermit), which waits for it again: the
// server says it again, not leave both sides waiting for ever (QA an:
// REMOTE DIRECTORY hung on a noisy line). An E answer too.
func TestServerSaysItsAnswerAgainWhenNAKed(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, []testFile{{"a.txt", []byte("alpha\n")}})
	a, b := link(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fsys, _ := filestore.Open(root)
	defer fsys.Close()
	srv := kermit.NewSession(b, kermit.DefaultConfig())
	defer srv.Close()
	go srv.Serve(ctx, fsys)
	r := bufio.NewReader(a)
	a.SetReadDeadline(time.Now().Add(30 * time.Second)) // a server that never says it again fails the read
	for _, cmd := range []struct{ name, data string }{
		{"REMOTE PWD", "A"},
		{"REMOTE CD to nowhere (an E)", "C'nowhere"},
	} {
		writePacket(t, a, framing.Packet{Seq: 0, Type: 'G', Data: []byte(cmd.data)})
		first := readPacket(t, r)
		writePacket(t, a, framing.Packet{Seq: 0, Type: 'N'})
		again := readPacket(t, r)
		if first.Seq != 0 || again.Seq != first.Seq || again.Type != first.Type || !bytes.Equal(again.Data, first.Data) {
			t.Errorf("%s: answered %c/%d %q, then to the NAK %c/%d %q; want the same packet again", cmd.name, first.Type, first.Seq, first.Data, again.Type, again.Seq, again.Data)
		}
	}
}

// A command lost on the line is asked for again: a damaged packet in
// the server's command wait is NAKed at once (a kerf client sends its
// command again), and a NAK of 0 with no answer to say again (the
// command never came whole) is answered with an E that ends that
// command, not the session (QA an: C-Kermit NAKs the answer it waits
// for, takes a NAK back for its own echo, and never resends a command
// unasked; both sides waited for ever).
func TestServerNAKsALostCommand(t *testing.T) {
	a, b := link(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fsys, _ := filestore.Open(t.TempDir())
	defer fsys.Close()
	srv := kermit.NewSession(b, kermit.DefaultConfig())
	defer srv.Close()
	go srv.Serve(ctx, fsys)
	r := bufio.NewReader(a)
	a.SetReadDeadline(time.Now().Add(30 * time.Second))
	// A G whose check the line changed.
	w, err := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'G', Data: []byte("A")})
	if err != nil {
		t.Fatal(err)
	}
	w[len(w)-1] ^= 1
	a.Write(append(w, '\r'))
	if p := readPacket(t, r); p.Type != 'N' || p.Seq != 0 {
		t.Errorf("to a damaged command: %c/%d, want N/0", p.Type, p.Seq)
	}
	// The client's NAK of the answer to a command that never came.
	writePacket(t, a, framing.Packet{Seq: 0, Type: 'N'})
	if p := readPacket(t, r); p.Type != 'E' || p.Seq != 0 || !strings.Contains(string(p.Data), "give it again") {
		t.Errorf("to a NAK with nothing answered: %c/%d %q, want E/0 asking for the command again", p.Type, p.Seq, p.Data)
	}
	// The command, sent again, is answered.
	writePacket(t, a, framing.Packet{Seq: 0, Type: 'G', Data: []byte("A")})
	if p := readPacket(t, r); p.Type != 'Y' || string(p.Data) != "/" {
		t.Errorf("the command sent again: %c %q, want its answer", p.Type, p.Data)
	}
}
