package kermit_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A classic Kermit sending a file that grew while it read it (a log
// being written) sends more than its A announced, every packet checked,
// then a plain Z: the file is kept, as C-Kermit keeps it, and the group
// goes on (it ended the session).
func TestClassicSenderGrownFileIsKept(t *testing.T) {
	dst := t.TempDir()
	a, b := link(t, 0, 1)
	rcv := kermit.NewSession(b, kermit.DefaultConfig())
	defer rcv.Close()
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- rcv.Receive(ctx, store) }()

	r := bufio.NewReader(a)
	seq := 0
	send := func(typ byte, data []byte) framing.Packet {
		t.Helper()
		p, _ := framing.Frame{Check: 1}.AppendPacket(nil, framing.Packet{Seq: seq, Type: typ, Data: data})
		if _, err := a.Write(append(p, '\r')); err != nil {
			t.Fatal(err)
		}
		ack := readPacket(t, r)
		if ack.Seq != seq {
			t.Fatalf("answer to %c/%d: %c/%d", typ, seq, ack.Type, ack.Seq)
		}
		seq = (seq + 1) % 64
		return ack
	}
	params := framing.DefaultParams() // a classic Kermit: no kerf bits, block check 1
	if ack := send('S', params.Marshal()); ack.Type != 'Y' {
		t.Fatalf("S answered %c", ack.Type)
	}
	attrs := framing.NewAttributes()
	attrs.Length = 5
	attrs.Type = "B8"
	for _, f := range []struct{ name, data string }{{"grown.log", "hello, world"}, {"next.txt", "hello"}} {
		send('F', []byte(f.name))
		for _, c := range attrs.Marshal(90) {
			if ack := send('A', c); ack.Type != 'Y' || len(ack.Data) > 0 && ack.Data[0] == 'N' {
				t.Fatalf("A of %s answered %c %q", f.name, ack.Type, ack.Data)
			}
		}
		send('D', []byte(f.data))
		if ack := send('Z', nil); ack.Type != 'Y' {
			t.Fatalf("Z of %s answered %c %q", f.name, ack.Type, ack.Data)
		}
	}
	send('B', nil)
	if err := <-rerr; err != nil {
		t.Fatalf("receive: %v", err)
	}
	for name, want := range map[string]string{"grown.log": "hello, world", "next.txt": "hello"} {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}
