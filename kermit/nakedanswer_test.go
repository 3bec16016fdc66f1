package kermit_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// scriptedClient serves root with a session of cfg over a loopback link
// until the test ends, and returns the client's end, which the test
// plays as a scripted classic client; a server that never answers fails
// its reads after 30 s.
func scriptedClient(t *testing.T, root string, cfg kermit.Config) net.Conn {
	t.Helper()
	a, b := link(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	fsys, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	srv := kermit.NewSession(b, cfg)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, fsys) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-done; fsys.Close() })
	a.SetReadDeadline(time.Now().Add(30 * time.Second))
	return a
}

// A serial server whose answer to a REMOTE command came damaged is NAKed
// for it by a classic client (C-Kermit), which waits for it again: the
// server says it again, not leave both sides waiting for ever (QA an:
// REMOTE DIRECTORY hung on a noisy line). An E answer too.
func TestServerSaysItsAnswerAgainWhenNAKed(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, []testFile{{"a.txt", []byte("alpha\n")}})
	a := scriptedClient(t, root, kermit.DefaultConfig()) // a server that never says it again fails the read
	r := bufio.NewReader(a)
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
	a := scriptedClient(t, t.TempDir(), kermit.DefaultConfig())
	r := bufio.NewReader(a)
	// A command answered, whose answer must not stand for the next one's.
	writePacket(t, a, framing.Packet{Seq: 0, Type: 'G', Data: []byte("A")})
	if p := readPacket(t, r); p.Type != 'Y' {
		t.Fatalf("REMOTE PWD: %c %q", p.Type, p.Data)
	}
	// A G whose check the line changed.
	w, err := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: 0, Type: 'G', Data: []byte("C$sub")})
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
		t.Errorf("to a NAK of the damaged command: %c/%d %q, want E/0 asking for the command again (not the last command's answer: review 56b)", p.Type, p.Seq, p.Data)
	}
	// The command, sent again, is answered.
	writePacket(t, a, framing.Packet{Seq: 0, Type: 'G', Data: []byte("A")})
	if p := readPacket(t, r); p.Type != 'Y' || string(p.Data) != "/" {
		t.Errorf("the command sent again: %c %q, want its answer", p.Type, p.Data)
	}
}

// A serial server forcing type 3 (block check 5) tells a client that
// does not in a short type-1 E, which that client can read (review 56b:
// the server's E went with type 3 and a long header, as the sender's
// did for QA an).
func TestServerTellsANonForce3ClientPlainly(t *testing.T) {
	cfg := kermit.DefaultConfig()
	cfg.Check = kermit.CheckForce3
	a := scriptedClient(t, t.TempDir(), cfg)
	init := framing.Packet{Seq: 0, Type: 'S', Data: []byte("~% @-#Y3~?")}
	writePacket(t, a, init)
	writePacket(t, a, init) // named at the second: the first alone reads as damage
	r := bufio.NewReader(a)
	for {
		line, err := r.ReadBytes('\r')
		if err != nil {
			t.Fatalf("no E readable with check type 1: %v", err)
		}
		i := bytes.IndexByte(line, framing.SOH)
		if i < 0 {
			continue
		}
		p, _, err := (framing.Frame{Check: 1}).ParsePacket(line[i:])
		if err != nil || p.Type != 'E' {
			continue // (NAKs of the first S, in type 3)
		}
		if line[i+1] == ' ' || !strings.Contains(string(p.Data), "BLOCK-CHECK 5") {
			t.Errorf("the E: %q (a long packet, or no word of block check 5)", line[i:])
		}
		return
	}
}
