package framing

import "errors"

// Control characters and limits from the Kermit Protocol Manual.
const (
	SOH = 0x01 // default packet MARK

	MaxShortLen = 94   // largest LEN a short packet can carry
	MaxLongLen  = 9024 // largest DATA+CHECK a long packet can carry (94*95+94)
)

// CheckType is a block check type: 1 (6-bit sum), 2 (12-bit sum) or 3 (CRC-16/KERMIT).
type CheckType int

// Len is the number of characters the check occupies on the wire.
func (c CheckType) Len() int { panic("todo") }

// Sentinel errors; ParsePacket wraps them with detail.
var (
	ErrIncomplete = errors.New("framing: incomplete packet")
	ErrBadHeader  = errors.New("framing: bad packet header")
	ErrBadCheck   = errors.New("framing: bad block check")
	ErrTooLong    = errors.New("framing: packet data too long")
)

// Packet is one decoded Kermit packet. Data is the data field as it
// travels (still prefix-encoded); for ParsePacket it aliases the input.
type Packet struct {
	Seq  int  // 0..63
	Type byte // 'S', 'Y', 'D', ...
	Data []byte
}

// Frame holds the per-direction framing settings.
type Frame struct {
	Mark   byte      // start-of-packet; 0 means SOH
	Check  CheckType // block check type used for this packet
	Parity bool      // 7-bit line: ignore the 8th bit of every byte read
}

// AppendPacket appends p in wire form (MARK..CHECK, no EOL, no padding).
// It uses the long form when len(Data)+check+2 > 94. It fails with
// ErrTooLong if Data cannot fit even a long packet.
func (f Frame) AppendPacket(dst []byte, p Packet) ([]byte, error) { panic("todo") }

// ParsePacket decodes one packet at the start of buf, which must begin
// with the MARK. It returns the packet, the number of bytes it used, and
// an error. ErrIncomplete: more bytes are needed (n is 0). ErrBadHeader or
// ErrBadCheck: the packet is damaged; n tells how far to skip (at least 1)
// before looking for the next MARK. A short LEN of 95 or 96 is accepted
// for compatibility with C-Kermit 10.0 Beta.05-08 senders.
func (f Frame) ParsePacket(buf []byte) (p Packet, n int, err error) { panic("todo") }

// Check1, Check2 and CRC16 compute Kermit's three block checks over b.
func Check1(b []byte) byte   { panic("todo") }
func Check2(b []byte) uint16 { panic("todo") }
func CRC16(b []byte) uint16  { panic("todo") }
