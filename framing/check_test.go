package framing

import (
	"math/rand/v2"
	"testing"
)

// crc16GKermit is G-Kermit's tableless CRC (gkermit.c chk3), kept as the
// reference for the table-driven CRC16.
func crc16GKermit(b []byte) uint16 {
	var crc uint32
	for _, ch := range b {
		c := uint32(ch)
		q := (crc ^ c) & 0o17
		crc = (crc >> 4) ^ (q * 0o10201)
		q = (crc ^ (c >> 4)) & 0o17
		crc = (crc >> 4) ^ (q * 0o10201)
	}
	return uint16(crc)
}

// checkWire returns the wire characters of check type ct over b.
func checkWire(ct CheckType, b []byte, parity bool) string {
	var w [3]byte
	putCheck(w[:], ct, blockCheck(ct, b, parity))
	return string(w[:ct.Len()])
}

func TestCheckVectors(t *testing.T) {
	// Real S packet from C-Kermit 10.0 (LEN..DATA) and its wire check.
	sPacket := []byte(`9 S~/ @-#Y3~^>J)0___N"U1@`)
	tests := []struct {
		name string
		ct   CheckType
		in   string
		want string // wire characters
	}{
		{"crc catalogue check", 3, "123456789", `"&)`},
		{"crc empty", 3, "", "   "},
		{"sum1 C-Kermit S packet", 1, string(sPacket), "G"},
		{"sum1 empty", 1, "", " "},
		// From the transcripts: ACK packets "%\"Y" etc. with their checks.
		{"crc ACK seq 2", 3, `%"Y`, ".5!"},
		{"crc ACK seq 4", 3, `%$Y`, "+&1"},
		{"sum2 ACK seq 2", 2, `$"Y`, `"?`},
		{"sum1 ACK seq 2", 1, `#"Y`, "@"},
		{"sum1 G-Kermit long header", 1, ` #D#L`, "Y"},
	}
	for _, tc := range tests {
		if got := checkWire(tc.ct, []byte(tc.in), false); got != tc.want {
			t.Errorf("%s: check %d of %q = %q, want %q", tc.name, tc.ct, tc.in, got, tc.want)
		}
	}
	if got := CRC16([]byte("123456789")); got != 0x2189 {
		t.Errorf("CRC16(123456789) = %#04x, want 0x2189", got)
	}
}

func TestCheckTypeLen(t *testing.T) {
	for ct, want := range map[CheckType]int{0: 0, 1: 1, 2: 2, 3: 3, 4: 0, 5: 0, -1: 0, 'B': 0} {
		if got := ct.Len(); got != want {
			t.Errorf("CheckType(%d).Len() = %d, want %d", ct, got, want)
		}
	}
}

func TestChecksAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 600 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := CRC16(b), crc16GKermit(b); got != want {
			t.Fatalf("len %d: CRC16 %#04x, G-Kermit %#04x", n, got, want)
		}
		var s uint
		for _, c := range b {
			s += uint(c)
		}
		if got, want := Check2(b), uint16(s&0o7777); got != want {
			t.Fatalf("len %d: Check2 %#x, want %#x", n, got, want)
		}
		if got, want := Check1(b), byte((((s&0o300)>>6)+s)&0o77); got != want {
			t.Fatalf("len %d: Check1 %#x, want %#x", n, got, want)
		}
		// With parity the 8th bit is ignored.
		s7 := make([]byte, n)
		for i := range b {
			s7[i] = b[i] & 0x7F
		}
		for ct := CheckType(1); ct <= 3; ct++ {
			if blockCheck(ct, b, true) != blockCheck(ct, s7, false) {
				t.Fatalf("len %d: parity check %d differs from 7-bit data", n, ct)
			}
		}
	}
}

func BenchmarkCRC16(b *testing.B) {
	buf := make([]byte, 4096)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		CRC16(buf)
	}
}
