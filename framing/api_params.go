package framing

// Capability bits of the first CAPAS byte.
const (
	CapLong    = 2
	CapWindows = 4
	CapAttrs   = 8
	CapResend  = 16
	CapLocking = 32
)

// Capability bits of kerf's second CAPAS byte (a continuation byte that
// classic Kermits skip).
const (
	Cap2DualChannel = 2 // the kerf dual-channel extension
)

// WHATAMI bits.
const (
	WhatServer    = 1
	WhatBinary    = 2
	WhatLiteral   = 4
	WhatStreaming = 8
	WhatClear     = 16
	WhatValid     = 32
)

// Params are the Send-Init parameters of one side (S, I and their ACKs).
type Params struct {
	MaxLen   int       // MAXL, short packet length (<= 94)
	Timeout  int       // TIME, seconds
	NPad     int       // NPAD
	PadChar  byte      // PADC (the pad character itself, not ctl()'d)
	EOL      byte      // EOL (the terminator itself, e.g. '\r')
	QCTL     byte      // control prefix this side sends
	QBIN     byte      // 'Y', 'N' or a prefix character
	Check    CheckType // requested block check (1, 2, 3)
	REPT     byte      // repeat prefix, or ' ' for none
	Capas    int       // first CAPAS byte's bits (without the continuation bit)
	Capas2   int       // kerf's second CAPAS byte bits; 0 = not sent
	Window   int       // WINDO
	MaxLenX  int       // MAXLX1*95+MAXLX2, long packet length
	WhatAmI  int       // WHATAMI bits (WhatValid set if present)
	SysID    string    // e.g. "U1"
	WhatAmI2 int
	// Ext is kerf's extension field (dual-channel address and token);
	// sent after WHATAMI2 only when non-empty. Printable ASCII, <= 60 bytes.
	Ext string
}

// DefaultParams are the values the protocol assumes for absent fields.
func DefaultParams() Params { panic("todo") }

// Marshal returns the data field of an S/I packet or its ACK.
func (p Params) Marshal() []byte { panic("todo") }

// ParseParams decodes a Send-Init data field. Absent trailing fields take
// the protocol defaults; unknown CAPAS continuation bytes are skipped.
func ParseParams(data []byte) (Params, error) { panic("todo") }
