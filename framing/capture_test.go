package framing

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Transcripts of real C-Kermit 10.0 Beta.08 and G-Kermit 2.01 transfers,
// recorded by testdata/capture.sh (see testdata/README.md). Each has a
// .snd (bytes the file sender wrote) and a .rcv (bytes the receiver wrote).
var transcripts = []struct {
	name   string
	check  CheckType // negotiated type (S and its ACK use type 1)
	parity bool
	qbin   byte
	// decode: the D packets decode to the files with our Quoting (false
	// for the locking-shift transcript).
	decode bool
	// exact: files whose D packets our Encode reproduces byte for byte
	// with bare = zero (prefix all) and REPT '~'.
	exact []string
	files int // files expected in the transcript
}{
	{name: "ck_bc1_short", check: 1, decode: true, files: 3},
	{name: "ck_bc2", check: 2, decode: true, files: 4},
	{name: "ck_bc3", check: 3, decode: true, files: 3},
	{name: "ck_prefall", check: 3, decode: true, files: 3, exact: []string{"all256.bin", "small.txt"}},
	{name: "ck_parity", check: 3, parity: true, qbin: '&', decode: true, files: 3},
	{name: "ck_parity_ls", check: 3, parity: true, qbin: '&', files: 3},
	{name: "ck2gk_len95", check: 3, decode: true, files: 3},
	{name: "gk_bin", check: 3, decode: true, files: 2, exact: []string{"all256.bin", "runs.bin"}},
	{name: "gk2ck_text", check: 3, decode: true, files: 1, exact: []string{"small.txt"}},
	{name: "gk_parity", check: 3, parity: true, qbin: '&', decode: true, files: 2, exact: []string{"all256.bin"}},
}

// splitTranscript cuts a raw dump into packets with ParsePacket, skipping
// the text the Kermits print between packets. A packet that fails with the
// negotiated check is retried with type 1, which only S packets and their
// ACKs may use.
func splitTranscript(t *testing.T, raw []byte, check CheckType, parity bool) (pkts []Packet, wire [][]byte) {
	t.Helper()
	buf := bytes.Clone(raw)
	mask := byte(0xFF)
	if parity {
		mask = 0x7F
	}
	for i := 0; i < len(buf); {
		if buf[i]&mask != SOH {
			i++
			continue
		}
		f := Frame{Check: check, Parity: parity}
		p, n, err := f.ParsePacket(buf[i:])
		if errors.Is(err, ErrBadCheck) && check != 1 {
			f.Check = 1
			p, n, err = f.ParsePacket(buf[i:])
			if err == nil && p.Type != 'S' && !(p.Type == 'Y' && p.Seq == 0) {
				t.Errorf("offset %d: %c packet seq %d only valid with check type 1", i, p.Type, p.Seq)
			}
		}
		if err != nil {
			t.Fatalf("offset %d: %v (bytes %q)", i, err, buf[i:min(len(buf), i+20)])
		}
		pkts = append(pkts, p)
		wire = append(wire, buf[i:i+n])
		i += n
	}
	return pkts, wire
}

func readTestFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "files", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// attrIsText reports whether an A packet's type attribute ('"') says text
// ("A..."). A packets are not prefix-encoded (OBSERVED: '#' goes bare).
func attrIsText(data []byte) bool {
	for i := 0; i+1 < len(data); {
		tag, n := data[i], kunchar(data[i+1])
		if n < 0 || i+2+n > len(data) {
			return false
		}
		if tag == '"' {
			return n > 0 && data[i+2] == 'A'
		}
		i += 2 + n
	}
	return false
}

func TestTranscripts(t *testing.T) {
	for _, tc := range transcripts {
		t.Run(tc.name, func(t *testing.T) {
			q := Quoting{QCTL: '#', QBIN: tc.qbin, REPT: '~'}
			for _, dir := range []string{"snd", "rcv"} {
				raw, err := os.ReadFile(filepath.Join("testdata", "capture", tc.name+"."+dir))
				if err != nil {
					t.Fatal(err)
				}
				pkts, wire := splitTranscript(t, raw, tc.check, tc.parity)
				if len(pkts) < 4 {
					t.Fatalf("%s: only %d packets", dir, len(pkts))
				}
				// Writing each packet back gives the same bytes (7-bit ones
				// after parity stripping), except the LEN 95/96 packets
				// that kerf never emits.
				for i, p := range pkts {
					f := Frame{Check: tc.check}
					if p.Type == 'S' || p.Type == 'Y' && p.Seq == 0 {
						if len(wire[i]) == PacketLen(len(p.Data), 1) {
							f.Check = 1
						}
					}
					got, err := f.AppendPacket(nil, p)
					if err != nil {
						t.Fatal(err)
					}
					if l := wire[i][1]; l == 0x7F || l == 0x80 {
						continue
					}
					if !bytes.Equal(got, wire[i]) {
						t.Errorf("%s packet %d: rebuilt %q, wire %q", dir, i, got, wire[i])
					}
				}
				if dir == "snd" {
					checkSenderPackets(t, tc.name, pkts, q, tc.decode, tc.exact, tc.files)
				}
			}
		})
	}
}

func checkSenderPackets(t *testing.T, name string, pkts []Packet, q Quoting, decode bool, exact []string, nfiles int) {
	var (
		file, data []byte
		text       bool
		files      int
		dpkts      []Packet
	)
	for _, p := range pkts {
		switch p.Type {
		case 'S':
			if p.Seq != 0 {
				t.Errorf("S packet with seq %d", p.Seq)
			}
		case 'F':
			fn, err := q.Decode(nil, p.Data)
			if err != nil {
				t.Fatal(err)
			}
			file = bytes.ToLower(fn) // G-Kermit upper-cases names
			data, text, dpkts = data[:0], false, dpkts[:0]
		case 'A':
			text = attrIsText(p.Data)
		case 'D':
			dpkts = append(dpkts, p)
			if !decode {
				continue
			}
			var err error
			if data, err = q.Decode(data, p.Data); err != nil {
				t.Fatalf("%s: D packet seq %d: %v", file, p.Seq, err)
			}
		case 'Z':
			files++
			want := readTestFile(t, string(file))
			if text {
				want = bytes.ReplaceAll(want, []byte("\n"), []byte("\r\n"))
			}
			if decode && !bytes.Equal(data, want) {
				t.Errorf("%s (text %v): decoded %q\nwant %q", file, text, data, want)
			}
			for _, x := range exact {
				if x == string(file) {
					checkReencode(t, string(file), dpkts, q, want)
				}
			}
		}
	}
	if files != nfiles {
		t.Errorf("%d files in transcript, want %d", files, nfiles)
	}
}

// checkReencode asserts that Encode, given each packet's data length as
// its budget, produces the peer's D packets byte for byte.
func checkReencode(t *testing.T, file string, dpkts []Packet, q Quoting, src []byte) {
	t.Helper()
	for _, p := range dpkts {
		got, n := q.Encode(nil, src, len(p.Data))
		if !bytes.Equal(got, p.Data) {
			t.Errorf("%s: Encode gives %q\npeer sent %q", file, got, p.Data)
			return
		}
		src = src[n:]
	}
	if len(src) != 0 {
		t.Errorf("%s: %d bytes left after re-encoding", file, len(src))
	}
}

// TestCautiousBareMatchesCKermit reads which control bytes C-Kermit sent
// bare when transferring all 256 byte values with its default (CAUTIOUS)
// prefixing and with SET PREFIXING ALL.
func TestCautiousBareMatchesCKermit(t *testing.T) {
	for _, tc := range []struct {
		name string
		bare [256]bool
	}{
		{"ck_bc3", CautiousBare()},
		{"ck_prefall", [256]bool{}},
	} {
		raw, err := os.ReadFile(filepath.Join("testdata", "capture", tc.name+".snd"))
		if err != nil {
			t.Fatal(err)
		}
		pkts, _ := splitTranscript(t, raw, 3, false)
		var d []byte
		for _, p := range pkts {
			if p.Type == 'D' {
				d = p.Data // the first file is all256.bin, in one packet
				break
			}
		}
		sentBare := [256]bool{}
		c := 0
		for i := 0; i < len(d); i++ {
			if d[i] == '#' {
				i++
			} else {
				sentBare[c] = true
			}
			c++
		}
		if c != 256 {
			t.Fatalf("%s: %d bytes in the all256.bin packet", tc.name, c)
		}
		for b := range 256 {
			if !isControl(byte(b)) {
				continue
			}
			if sentBare[b] != tc.bare[b] {
				t.Errorf("%s: byte %#02x: C-Kermit sent bare=%v, table says %v", tc.name, b, sentBare[b], tc.bare[b])
			}
		}
	}
}

// TestCKermitLen95Bug pins the C-Kermit 10.0 Beta.08 packets whose short
// LEN is 95 or 96 (bytes 0x7F and 0x80): ParsePacket must accept them.
func TestCKermitLen95Bug(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "capture", "ck2gk_len95.snd"))
	if err != nil {
		t.Fatal(err)
	}
	pkts, wire := splitTranscript(t, raw, 3, false)
	var lens []string
	for i, p := range pkts {
		if p.Type == 'D' {
			lens = append(lens, string(rune(wire[i][1])))
			if want := 89 + len(lens) - 1; len(p.Data) != want {
				t.Errorf("D packet %d: %d data bytes, want %d", len(lens), len(p.Data), want)
			}
		}
	}
	if got := strings.Join(lens, ","); got != "~,\x7f,\u0080" {
		t.Errorf("D packet LEN bytes %q, want ~, 0x7F, 0x80", got)
	}
}

// TestCKermitLen96Parity: the same C-Kermit bug on a mark-parity line,
// where the LEN 96 byte 0x80 reads as 0x00 once parity is stripped.
// ParsePacket must still take it, with block check 3 (files of 89-91
// bytes) and 1 (92-93 bytes).
func TestCKermitLen96Parity(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check CheckType
		sizes []int
		lens  string // the D packets' LEN bytes, 8th bit stripped
	}{
		{"ck2gk_len96_mark", 3, []int{89, 90, 91}, "~,\x7f,\x00"},
		{"ck2gk_len96_mark_bc1", 1, []int{92, 93}, "\x7f,\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "capture", tc.name+".snd"))
			if err != nil {
				t.Fatal(err)
			}
			pkts, wire := splitTranscript(t, raw, tc.check, true)
			var lens []string
			for i, p := range pkts {
				if p.Type != 'D' {
					continue
				}
				if k := len(lens); k >= len(tc.sizes) || len(p.Data) != tc.sizes[k] {
					t.Errorf("D packet %d: %d data bytes, want sizes %v", k+1, len(p.Data), tc.sizes)
				} else if want := readTestFile(t, fmt.Sprintf("len%d.txt", tc.sizes[k])); !bytes.Equal(p.Data, want) {
					t.Errorf("D packet %d: data %q", k+1, p.Data)
				}
				lens = append(lens, string(rune(wire[i][1])))
			}
			if got := strings.Join(lens, ","); got != tc.lens {
				t.Errorf("D packet LEN bytes %q, want %q", got, tc.lens)
			}
		})
	}
}
