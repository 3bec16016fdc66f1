package kermit_test

import (
	"bufio"
	"bytes"
	"context"
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
