package kermit_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// scriptedSender plays a sender on a that sends S (with attributes),
// then each packet of script in turn, each waiting for its answer, and
// returns the type of the answer to the last packet sent (it stops at
// the first that is no ACK).
func scriptedSender(t *testing.T, a net.Conn, script []framing.Packet) byte {
	t.Helper()
	init := framing.DefaultParams()
	init.Capas |= framing.CapAttrs
	return scriptedSenderWith(t, a, init, script)
}

// scriptedSenderWith is scriptedSender sending init as its S.
func scriptedSenderWith(t *testing.T, a net.Conn, init framing.Params, script []framing.Packet) byte {
	t.Helper()
	r := bufio.NewReader(a)
	all := append([]framing.Packet{{Type: 'S', Data: init.Marshal()}}, script...)
	for seq, p := range all {
		b, err := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: seq % 64, Type: p.Type, Data: p.Data})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Write(append(b, '\r')); err != nil {
			t.Fatal(err)
		}
		if ans := readPacket(t, r); ans.Type != 'Y' {
			return ans.Type
		}
	}
	return 'Y'
}

// openUnder counts the process's descriptors open on files under dir.
func openUnder(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}

// An F while the last file has had no Z ends the group with a protocol
// error, and the file it cut off is closed and unlocked as any cut-off
// file is: its partial kept, another transfer free to take it. (QA aq:
// each such F left its file open and locked for the server's life; a
// stream of them used up the server's descriptors, every user's
// uploads failing, and the name could not be stored again.)
func TestFWithoutZClosesTheFile(t *testing.T) {
	dst := t.TempDir()
	attrs := framing.NewAttributes()
	attrs.Length = 100
	a1 := attrs.Marshal(90)[0]
	var answer byte
	err := receiveClassic(t, dst, func(a net.Conn) {
		var script []framing.Packet
		for _, name := range []string{"a", "b", "c"} {
			script = append(script, framing.Packet{Type: 'F', Data: []byte(name)}, framing.Packet{Type: 'A', Data: a1}, framing.Packet{Type: 'D', Data: []byte("hello")})
		}
		answer = scriptedSender(t, a, script)
	})
	if !errors.Is(err, kermit.ErrProtocol) {
		t.Errorf("receiver: %v; want a protocol error", err)
	}
	if answer != 'E' {
		t.Errorf("the second F was answered %c; want E", answer)
	}
	if n := openUnder(t, dst); n > 0 {
		t.Errorf("%d descriptors still open on files received", n)
	}
	// Another transfer takes the file up.
	dir, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	inc, err := dir.Create("a")
	if err != nil {
		t.Fatalf("the cut-off file cannot be taken again: %v", err)
	}
	if size, _, err := inc.Partial(); err != nil || size != 5 {
		t.Errorf("its partial: %d bytes, %v; want the 5 that came", size, err)
	}
	inc.Abort(true)
	if _, err := os.Stat(filepath.Join(dst, "b")); err == nil {
		t.Error("b, never begun, was stored")
	}
}

// A file's A packets are bounded: past 64 the group ends with a protocol
// error (QA aq: an endless run of A packets, each merged into all before
// it, held a server core at 100% and grew its memory five times the
// bytes sent, from any session, read-only and anonymous too).
func TestEndlessAttributesEndTheGroup(t *testing.T) {
	attrs := framing.NewAttributes()
	attrs.Length = 5
	a1 := attrs.Marshal(90)[0]
	var answer byte
	err := receiveClassic(t, t.TempDir(), func(a net.Conn) {
		script := []framing.Packet{{Type: 'F', Data: []byte("a")}}
		for range 1000 {
			script = append(script, framing.Packet{Type: 'A', Data: a1})
		}
		answer = scriptedSender(t, a, script)
	})
	if !errors.Is(err, kermit.ErrProtocol) || !strings.Contains(err.Error(), "more than 64 attribute packets") {
		t.Errorf("receiver: %v; want a protocol error about the attribute packets", err)
	}
	if answer != 'E' {
		t.Errorf("the last A was answered %c; want E", answer)
	}
}

// From a kerf peer, a length attribute that is no number of bytes is a
// protocol error (QA aq L3: "99999999999999999999999" and "-5" were
// taken as no length, and the file stored, exit 0).
func TestKerfPeersUnreadableLengthRefused(t *testing.T) {
	for _, length := range []string{"99999999999999999999999", "-5", "12abc"} {
		var answer byte
		dst := t.TempDir()
		err := receiveClassic(t, dst, func(a net.Conn) {
			init := framing.DefaultParams()
			init.Capas |= framing.CapAttrs
			init.Capas2 |= kermit.Capas2RawOK
			a1 := append([]byte{'1', byte(32 + len(length))}, length...)
			answer = scriptedSenderWith(t, a, init, []framing.Packet{{Type: 'F', Data: []byte("a")}, {Type: 'A', Data: a1}, {Type: 'D', Data: []byte("hello")}, {Type: 'Z'}})
		})
		if !errors.Is(err, kermit.ErrProtocol) || !strings.Contains(err.Error(), "length") {
			t.Errorf("length %q: receiver: %v; want a protocol error about the length", length, err)
		}
		if answer != 'E' {
			t.Errorf("length %q: answered %c; want E", length, answer)
		}
		if _, err := os.Stat(filepath.Join(dst, "a")); err == nil {
			t.Errorf("length %q: the file was stored", length)
		}
	}
}
