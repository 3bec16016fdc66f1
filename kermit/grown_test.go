package kermit_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// classicFile is a file a scripted classic Kermit sends: its A, and its
// data in one D packet.
type classicFile struct {
	name, data string
	attrs      framing.Attributes
	// pushOn: a hostile sender, going on with the data and a plain Z
	// after its file was refused.
	pushOn bool
}

// classicSend plays a classic Kermit sender (no kerf bits, block check 1,
// no windows) on a, sending files as one group, and returns the data of
// each file's A ACK. It fails t on anything but ACKs, except that a
// refused file, or one canceled by an X in its D's ACK, is ended with
// Z D, as C-Kermit does.
func classicSend(t *testing.T, a net.Conn, files []classicFile) (verdicts []string) {
	t.Helper()
	return classicSendCheck(t, a, files, 1)
}

// classicSendCheck is classicSend asking for block check chk.
func classicSendCheck(t *testing.T, a net.Conn, files []classicFile, chk framing.CheckType) (verdicts []string) {
	t.Helper()
	r := bufio.NewReader(a)
	seq := 0
	frame := framing.Frame{Check: 1} // the S and its ACK: type 1 always
	send := func(typ byte, data []byte) framing.Packet {
		t.Helper()
		b, err := frame.AppendPacket(nil, framing.Packet{Seq: seq, Type: typ, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Write(append(b, '\r')); err != nil {
			t.Fatal(err)
		}
		ack := readPacket(t, r)
		if ack.Seq != seq || ack.Type != 'Y' {
			t.Fatalf("answer to %c/%d: %c/%d %q", typ, seq, ack.Type, ack.Seq, ack.Data)
		}
		seq = (seq + 1) % 64
		return ack
	}
	init := framing.DefaultParams()
	init.Capas |= framing.CapAttrs // as C-Kermit's
	init.Check = chk
	send('S', init.Marshal())
	frame.Check = chk
	for _, f := range files {
		send('F', []byte(f.name))
		var verdict []byte
		for _, c := range f.attrs.Marshal(90) {
			verdict = send('A', c).Data
		}
		verdicts = append(verdicts, string(verdict))
		if len(verdict) > 0 && verdict[0] == 'N' && !f.pushOn {
			send('Z', []byte("D"))
			continue
		}
		if ack := send('D', []byte(f.data)); string(ack.Data) == "X" {
			send('Z', []byte("D"))
			continue
		}
		send('Z', nil)
	}
	send('B', nil)
	return verdicts
}

// receiveClassic runs a kerf receiver into dst while play drives the
// other end, and returns the receiver's error.
func receiveClassic(t *testing.T, dst string, play func(a net.Conn)) error {
	t.Helper()
	return receiveClassicEvents(t, dst, nil, play)
}

// receiveClassicEvents is receiveClassic telling events its events.
func receiveClassicEvents(t *testing.T, dst string, events func(kermit.Event), play func(a net.Conn)) error {
	t.Helper()
	a, b := link(t, 0, 1)
	rcv := kermit.NewSession(b, kermit.DefaultConfig())
	defer rcv.Close()
	if events != nil {
		rcv.SetEvents(events)
	}
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- rcv.Receive(ctx, store) }()
	play(a)
	return <-rerr
}

// A classic Kermit sending a file that grew while it read it (a log
// being written) sends more than its A announced, every packet checked,
// then a plain Z: the file is kept, as C-Kermit keeps it, and the group
// goes on (it ended the session). Checked by block check 1 or 2 only,
// the same excess is as likely a damaged packet that passed the 6- or
// 12-bit sum (QA: a noisy line stored a file with most of its bytes
// wrong, with either): not stored, the file canceled on the D that
// overran (X in its ACK) and reported failed, and the group goes on with
// the next file (the refusal, at the Z, ended the batch).
func TestClassicSenderGrownFileIsKept(t *testing.T) {
	dst := t.TempDir()
	attrs := framing.NewAttributes()
	attrs.Length, attrs.Type = 5, "B8"
	err := receiveClassic(t, dst, func(a net.Conn) {
		classicSendCheck(t, a, []classicFile{{name: "grown.log", data: "hello, world", attrs: attrs}, {name: "next.txt", data: "hello", attrs: attrs}}, 3)
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	for name, want := range map[string]string{"grown.log": "hello, world", "next.txt": "hello"} {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}

	for _, check := range []framing.CheckType{1, 2} {
		dst = t.TempDir()
		var failed []kermit.Event
		events := func(e kermit.Event) {
			if e.Kind == kermit.FileFailed {
				failed = append(failed, e)
			}
		}
		err = receiveClassicEvents(t, dst, events, func(a net.Conn) {
			classicSendCheck(t, a, []classicFile{{name: "grown.log", data: "hello, world", attrs: attrs}, {name: "next.txt", data: "hello", attrs: attrs}}, check)
			a.Close()
		})
		if err != nil {
			t.Fatalf("receive with block check %d: %v; want the group to go on past the file", check, err)
		}
		if len(failed) != 1 || failed[0].Name != "grown.log" || failed[0].Err == nil || !strings.Contains(failed[0].Err.Error(), fmt.Sprintf("block check %d", check)) {
			t.Errorf("block check %d: failures %+v; want grown.log's alone, saying why", check, failed)
		}
		if _, err := os.Stat(filepath.Join(dst, "grown.log")); !os.IsNotExist(err) {
			t.Errorf("grown.log stored with block check %d (%v)", check, err)
		}
		if got, err := os.ReadFile(filepath.Join(dst, "next.txt")); err != nil || string(got) != "hello" {
			t.Errorf("next.txt = %q, %v; want it stored after the failed file", got, err)
		}
		if es, _ := os.ReadDir(dst); len(es) != 1 {
			t.Errorf("block check %d: %d entries stored, want next.txt alone", check, len(es))
		}
	}
}

// A text-mode file sent for recovery is refused ("N+"), and stays
// refused when the sender goes on with its data regardless: nothing is
// stored (it was, under the file's name).
func TestRefusedTextRecoveryIsNotStored(t *testing.T) {
	dst := t.TempDir()
	// A partial of an earlier binary transfer of another file: kept.
	partial := filepath.Join(dst, ".kept.bin.kerf-part")
	if err := os.WriteFile(partial, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := framing.NewAttributes()
	text.Length, text.Type, text.Disposition = 5, "AA", "R"
	plain := framing.NewAttributes()
	plain.Length, plain.Type = 5, "B8"
	var verdicts []string
	err := receiveClassic(t, dst, func(a net.Conn) {
		verdicts = classicSend(t, a, []classicFile{{name: "resumed.txt", data: "hello", attrs: text, pushOn: true}, {name: "next.bin", data: "world", attrs: plain}})
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(verdicts) != 2 || !strings.HasPrefix(verdicts[0], "N+") {
		t.Fatalf("verdicts %q; want the text file refused with N+", verdicts)
	}
	if _, err := os.Stat(filepath.Join(dst, "resumed.txt")); err == nil {
		t.Error("the refused file was stored")
	}
	if got, err := os.ReadFile(filepath.Join(dst, "next.bin")); err != nil || string(got) != "world" {
		t.Errorf("next.bin = %q, %v", got, err)
	}
	if es, _ := os.ReadDir(dst); len(es) != 2 {
		t.Errorf("%d entries in the destination, want next.bin and the other partial", len(es))
	}
}

// A text-mode recovery of a file whose binary partial is there: refused,
// and the partial kept for a binary resume (it was removed).
func TestRefusedTextRecoveryKeepsThePartial(t *testing.T) {
	dst := t.TempDir()
	partial := filepath.Join(dst, ".resumed.bin.kerf-part")
	if err := os.WriteFile(partial, []byte("half of it"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := framing.NewAttributes()
	text.Length, text.Type, text.Disposition = 20, "AA", "R"
	err := receiveClassic(t, dst, func(a net.Conn) {
		classicSend(t, a, []classicFile{{name: "resumed.bin", data: "x", attrs: text}})
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if got, err := os.ReadFile(partial); err != nil || string(got) != "half of it" {
		t.Errorf("partial = %q, %v; want it kept", got, err)
	}
}

// A classic sender's DATA.BIN and data.bin in one group would both be
// stored as data.bin (names are lower-cased): the second is refused, not
// stored over the first without a word.
func TestClassicNamesThatClashAreRefused(t *testing.T) {
	dst := t.TempDir()
	attrs := framing.NewAttributes()
	attrs.Length, attrs.Type = 5, "B8"
	var verdicts []string
	err := receiveClassic(t, dst, func(a net.Conn) {
		verdicts = classicSend(t, a, []classicFile{{name: "DATA.BIN", data: "upper", attrs: attrs}, {name: "data.bin", data: "lower", attrs: attrs}, {name: "OTHER.BIN", data: "other", attrs: attrs}})
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(verdicts) != 3 || strings.HasPrefix(verdicts[0], "N") || !strings.HasPrefix(verdicts[1], "N") || strings.HasPrefix(verdicts[2], "N") {
		t.Fatalf("verdicts %q; want the second refused", verdicts)
	}
	for name, want := range map[string]string{"data.bin": "upper", "other.bin": "other"} {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}

// So is one name sent twice in a group (C-Kermit's send */README, its
// directories stripped): the first stays (QA: the second was stored
// over it, both sides saying all went well).
func TestClassicNameSentTwiceIsRefused(t *testing.T) {
	dst := t.TempDir()
	attrs := framing.NewAttributes()
	attrs.Length, attrs.Type = 5, "B8"
	var verdicts []string
	err := receiveClassic(t, dst, func(a net.Conn) {
		verdicts = classicSend(t, a, []classicFile{{name: "SAME.BIN", data: "first", attrs: attrs}, {name: "SAME.BIN", data: "again", attrs: attrs}})
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(verdicts) != 2 || strings.HasPrefix(verdicts[0], "N") || !strings.HasPrefix(verdicts[1], "N") {
		t.Fatalf("verdicts %q; want the second refused", verdicts)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "same.bin")); err != nil || string(got) != "first" {
		t.Errorf("same.bin = %q, %v; want the first", got, err)
	}
}

// Text in Latin-1 (C-Kermit's SET TRANSFER CHARACTER-SET LATIN1, the A's
// "*CI6/100") is stored as UTF-8, kerf's text character set; UTF-8 and
// transparent text as they come; a set kerf does not translate is
// refused with "*", which C-Kermit counts as a failure, not stored wrong.
func TestTextCharacterSets(t *testing.T) {
	dst := t.TempDir()
	text := func(enc string) framing.Attributes {
		a := framing.NewAttributes()
		a.Type, a.Encoding = "AMJ", enc
		return a
	}
	var verdicts []string
	err := receiveClassic(t, dst, func(a net.Conn) {
		verdicts = classicSend(t, a, []classicFile{
			{name: "latin1.txt", data: "caf\xe9\r\n", attrs: text("CI6/100")},
			{name: "utf8.txt", data: "caf\xc3\xa9\r\n", attrs: text("CI196")},
			{name: "plain.txt", data: "caf\xe9\r\n", attrs: text("")},
			{name: "cyrillic.txt", data: "\xd0\xd2\r\n", attrs: text("CI6/144")},
		})
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(verdicts) != 4 || !strings.HasPrefix(verdicts[3], "N*") {
		t.Errorf("A verdicts %q; want the last refused with N*", verdicts)
	}
	for name, want := range map[string]string{"latin1.txt": "café\n", "utf8.txt": "café\n", "plain.txt": "caf\xe9\n"} {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "cyrillic.txt")); err == nil {
		t.Error("cyrillic.txt stored")
	}
}
