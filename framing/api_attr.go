package framing

import "time"

// Attributes are the file attributes of an A packet.
type Attributes struct {
	Length      int64     // tag '1'; -1 absent
	LengthK     int64     // tag '!'; -1 absent
	Type        string    // tag '"', e.g. "B8", "AMJ"
	ModTime     time.Time // tag '#'; zero absent (yyyymmdd hh:mm:ss, local time per C-Kermit)
	Encoding    string    // tag '*'
	Disposition string    // tag '+', e.g. "R" for recovery
	Perm        int       // tag ',' (octal Unix mode); -1 absent
	GenericProt string    // tag '-'
	SysID       string    // tag '.'
	Extra       []Attr    // tags this package does not model, kept in order
}

// Attr is one raw attribute.
type Attr struct {
	Tag   byte
	Value []byte
}

// NewAttributes returns Attributes with every numeric field absent.
func NewAttributes() Attributes { panic("todo") }

// Marshal encodes the attributes as one or more A-packet data fields, each
// at most max bytes long (an attribute is never split).
func (a Attributes) Marshal(max int) [][]byte { panic("todo") }

// ParseAttributes decodes one A-packet data field and merges it into a.
func (a *Attributes) Parse(data []byte) error { panic("todo") }
