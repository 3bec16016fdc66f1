package framing

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Real-peer transcripts recorded by testdata/peers/capture.sh (see the
// README there). Each NAME.txt lists the non-D packets of one session as
//
//	LABEL TYPE SEQ CHECK "DATA"
//
// with DATA Go-quoted; LABEL is l2r or r2l (direction), the packet type and
// sequence number, plus "#n" for the n-th repeat of that pair.

type peerPacket struct {
	Type  byte
	Seq   int
	Check string
	Data  []byte
}

// readPeerSession loads testdata/peers/NAME.txt keyed by label.
func readPeerSession(t testing.TB, name string) map[string]peerPacket {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "peers", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := make(map[string]peerPacket)
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.SplitN(line, " ", 5)
		if len(fs) != 5 || len(fs[1]) != 1 {
			t.Fatalf("%s.txt:%d: malformed line %q", name, ln, line)
		}
		seq, err := strconv.Atoi(fs[2])
		if err != nil {
			t.Fatalf("%s.txt:%d: %v", name, ln, err)
		}
		data, err := strconv.Unquote(fs[4])
		if err != nil {
			t.Fatalf("%s.txt:%d: %v", name, ln, err)
		}
		m[fs[0]] = peerPacket{Type: fs[1][0], Seq: seq, Check: fs[3], Data: []byte(data)}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// peerData returns the data field of one labelled packet.
func peerData(t testing.TB, name, label string) []byte {
	t.Helper()
	p, ok := readPeerSession(t, name)[label]
	if !ok {
		t.Fatalf("%s.txt: no packet labelled %s", name, label)
	}
	return p.Data
}

// TestPeerSessionsMatchRaw checks that every extracted packet's data really
// occurs in the raw dump of its direction, so the .txt files cannot drift
// from the recordings.
func TestPeerSessionsMatchRaw(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "peers", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sessions: %v", err)
	}
	for _, fn := range files {
		name := strings.TrimSuffix(filepath.Base(fn), ".txt")
		raw := map[string][]byte{}
		for _, dir := range []string{"l2r", "r2l"} {
			b, err := os.ReadFile(filepath.Join("testdata", "peers", "raw", name+"."+dir))
			if err != nil {
				t.Fatal(err)
			}
			raw[dir] = b
		}
		for label, p := range readPeerSession(t, name) {
			dir := label[:3]
			hdr := []byte{p.Type}
			if !bytes.Contains(raw[dir], append(hdr, p.Data...)) {
				t.Errorf("%s %s: type+data %q not found in raw/%s.%s", name, label, p.Data, name, dir)
			}
		}
	}
}
