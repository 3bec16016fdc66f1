package framing

// Attribute packets (type A) and the receiver's reply to them (the data of
// its ACK). An A packet's data field is a run of
//
//	TAG tochar(len) VALUE
//
// with len <= 94 (ckcfn3.c sattr()/gattr(), gkermit.c sattr()/gattr()). A
// file's attributes may span several A packets; '@' with an empty value
// marks the end.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Attribute tags kerf models (Kermit Protocol Manual, C-Kermit's sattr()).
const (
	AttrLengthK     = '!' // length in K (1024 bytes), decimal
	AttrType        = '"' // file type: "A…" text, "B8" binary
	AttrDate        = '#' // modification date, yyyymmdd hh:mm:ss local time
	AttrEncoding    = '*' // transfer encoding: "A", "C"+charset designator
	AttrDisposition = '+' // "R" recovery (RESEND), "M" mail, "P" print
	AttrPerm        = ',' // system-dependent protection: octal Unix mode
	AttrGenericProt = '-' // generic protection, one tochar'd bit mask
	AttrSysID       = '.' // sender's system ID, e.g. "U1"
	AttrLength      = '1' // exact length in bytes, decimal
	AttrEnd         = '@' // end of attributes, empty value
)

// maxAttrValue is the longest value tochar(len) can count.
const maxAttrValue = 94

// ErrBadAttributes reports an A-packet data field that is cut short or
// carries an unusable length; ErrBadAttrReply an unusable reply to one.
var (
	ErrBadAttributes = errors.New("framing: bad attribute packet")
	ErrBadAttrReply  = errors.New("framing: bad attribute reply")
)

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
	// Zone is the time zone '#' dates are written and read in: nil is
	// local time, as C-Kermit does; two kerf peers agree on UTC.
	Zone *time.Location
	// SubSecond writes the '#' date with its fraction of a second
	// (".nnnnnnnnn" after the seconds, when not zero), for a kerf peer
	// that reads it (protocol.md §5.2); a fraction is always read.
	SubSecond bool
	// Extra holds, in order, the tags this package does not model and
	// modelled tags whose value it could not decode (a non-numeric length,
	// an unreadable date, a non-octal mode), so nothing received is lost.
	// It never holds '@', nor more than MaxExtraAttrs.
	Extra []Attr
}

// MaxExtraAttrs is the most attributes Extra holds: Parse refuses a field
// that would take it past (a peer's few unknown tags are far fewer; a
// hostile one's endless stream of them cost memory and, copied at each
// packet, time: QA aq).
const MaxExtraAttrs = 256

// Attr is one raw attribute.
type Attr struct {
	Tag   byte
	Value []byte
}

// NewAttributes returns Attributes with every numeric field absent.
func NewAttributes() Attributes {
	return Attributes{Length: -1, LengthK: -1, Perm: -1}
}

// Marshal encodes the attributes as one or more A-packet data fields, each
// at most max bytes long (an attribute is never split).
//
// Attributes go out in C-Kermit's order: '.', '"', '*', '#', '!', '1', ',',
// '-', '+', then Extra in order; '@' ends the last field (in a field of its
// own when the last one is full). Empty strings, negative numbers and a
// zero ModTime are absent and not sent; so are Extra entries tagged '@'. A
// value longer than 94 bytes, or an attribute that cannot fit in max bytes
// even alone, cannot be sent and is left out: attributes are advisory, and
// a field longer than the peer can receive would break the transfer. With
// max < 2 nothing fits and Marshal returns nil. ModTime is written with
// FormatAttrTime, in local time; years outside 0..9999 are left out.
func (a Attributes) Marshal(max int) [][]byte {
	// One buffer a field, numbers and the date formatted on the stack:
	// a sender marshals a file's attributes for every file.
	m := attrFields{max: max}
	m.addString(AttrSysID, a.SysID)
	m.addString(AttrType, a.Type)
	m.addString(AttrEncoding, a.Encoding)
	var scratch [40]byte
	if t := a.ModTime.In(a.zone()); !a.ModTime.IsZero() && t.Year() >= 0 && t.Year() <= 9999 {
		v := t.AppendFormat(scratch[:0], attrTimeLayout)
		if a.SubSecond {
			v = appendNanos(v, t)
		}
		m.add(AttrDate, v)
	}
	if a.LengthK >= 0 {
		m.add(AttrLengthK, strconv.AppendInt(scratch[:0], a.LengthK, 10))
	}
	if a.Length >= 0 {
		m.add(AttrLength, strconv.AppendInt(scratch[:0], a.Length, 10))
	}
	if a.Perm >= 0 {
		m.add(AttrPerm, strconv.AppendInt(scratch[:0], int64(a.Perm), 8))
	}
	m.addString(AttrGenericProt, a.GenericProt)
	m.addString(AttrDisposition, a.Disposition)
	for _, x := range a.Extra {
		if x.Tag != AttrEnd {
			m.add(x.Tag, x.Value)
		}
	}
	m.add(AttrEnd, nil)
	if len(m.cur) > 0 {
		m.out = append(m.out, m.cur)
	}
	return m.out
}

// attrFields gathers attribute fields into data fields of at most max
// bytes (Attributes.Marshal).
type attrFields struct {
	max int
	out [][]byte
	cur []byte
}

// open makes room in the current data field for a field of n value
// bytes, starting a new data field when it does not fit; false: no data
// field can hold it, and it is left out.
func (m *attrFields) open(n int) bool {
	if n > maxAttrValue || 2+n > m.max {
		return false
	}
	if len(m.cur)+2+n > m.max {
		m.out = append(m.out, m.cur)
		m.cur = nil
	}
	if m.cur == nil {
		m.cur = make([]byte, 0, min(m.max, 128))
	}
	return true
}

// add appends one field.
func (m *attrFields) add(tag byte, v []byte) {
	if m.open(len(v)) {
		m.cur = append(append(m.cur, tag, kchar(len(v))), v...)
	}
}

// addString is add for a string value, absent when empty.
func (m *attrFields) addString(tag byte, s string) {
	if s != "" && m.open(len(s)) {
		m.cur = append(append(m.cur, tag, kchar(len(s))), s...)
	}
}

// Parse decodes one A-packet data field and merges it into a: attributes it
// carries replace those already in a, unknown ones are appended to Extra.
// An '@' is accepted anywhere and skipped, as C-Kermit does. If the field
// is cut short (a tag without its length, or a value running past the end)
// or a length byte is not in ' '..'~', or Extra would grow past
// MaxExtraAttrs, Parse returns an error wrapping ErrBadAttributes and
// leaves a unchanged.
func (a *Attributes) Parse(data []byte) error {
	b := *a
	b.Extra = slices.Clone(a.Extra)
	for i := 0; i < len(data); {
		tag := data[i]
		if i+1 >= len(data) {
			return fmt.Errorf("%w: tag %q at offset %d has no length", ErrBadAttributes, tag, i)
		}
		n, ok := dec94(data[i+1])
		if !ok {
			return fmt.Errorf("%w: tag %q at offset %d has length byte %#x", ErrBadAttributes, tag, i, data[i+1])
		}
		if i+2+n > len(data) {
			return fmt.Errorf("%w: tag %q at offset %d: %d-byte value cut short", ErrBadAttributes, tag, i, n)
		}
		b.set(tag, data[i+2:i+2+n])
		if len(b.Extra) > MaxExtraAttrs {
			return fmt.Errorf("%w: more than %d attributes not understood", ErrBadAttributes, MaxExtraAttrs)
		}
		i += 2 + n
	}
	*a = b
	return nil
}

// set stores one attribute, falling back to Extra when a modelled value
// cannot be decoded.
func (a *Attributes) set(tag byte, v []byte) {
	ok := true
	switch tag {
	case AttrEnd:
	case AttrLength, AttrLengthK:
		var n int64
		if n, ok = parseDecimal(v); ok && tag == AttrLength {
			a.Length = n
		} else if ok {
			a.LengthK = n
		}
	case AttrPerm:
		var p int64
		if p, ok = parseOctal(v); ok {
			a.Perm = int(p)
		}
	case AttrDate:
		var t time.Time
		var err error
		if t, err = parseAttrTimeIn(string(v), a.zone()); err == nil {
			a.ModTime = t
		}
		ok = err == nil
	case AttrType:
		a.Type = string(v)
	case AttrEncoding:
		a.Encoding = string(v)
	case AttrDisposition:
		a.Disposition = string(v)
	case AttrGenericProt:
		a.GenericProt = string(v)
	case AttrSysID:
		a.SysID = string(v)
	default:
		ok = false
	}
	if !ok {
		a.Extra = append(a.Extra, Attr{Tag: tag, Value: slices.Clone(v)})
	}
}

// parseDecimal accepts one or more ASCII digits (no sign) whose value fits
// an int64.
func parseDecimal(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseOctal accepts 1..10 octal digits (no sign): at most 2^30-1, which
// fits an int everywhere.
func parseOctal(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '7' {
			return 0, false
		}
		n = n*8 + int64(c-'0')
	}
	return n, true
}

// Attribute dates.
//
// Kermit's '#' attribute carries a wall-clock time with no zone.
// C-Kermit writes a file's mtime with localtime() (ckufio.c zdtstr()) and
// reads an incoming date back as local time (zstrdt()), and so does kerf:
// FormatAttrTime and ParseAttrTime use time.Local. Between machines in the
// same zone dates survive exactly; across zones they shift by the
// difference, as they do between two C-Kermits. Two kerf peers know each
// other from the Send-Init and write and read dates in UTC instead
// (Attributes.Zone, formatAttrTimeIn, parseAttrTimeIn), so theirs survive
// across zones; the form on the wire is the same.

const attrTimeLayout = "20060102 15:04:05"

// FormatAttrTime formats t for the '#' attribute as "yyyymmdd hh:mm:ss" in
// local time (t.In(time.Local)), the form C-Kermit sends and the only one
// its Unix receiver accepts.
func FormatAttrTime(t time.Time) string { return formatAttrTimeIn(t, time.Local) }

// formatAttrTimeIn is FormatAttrTime in zone loc.
func formatAttrTimeIn(t time.Time, loc *time.Location) string {
	return t.In(loc).Format(attrTimeLayout)
}

// ParseAttrTime is parseAttrTimeIn(s, time.Local).
func ParseAttrTime(s string) (time.Time, error) { return parseAttrTimeIn(s, time.Local) }

func (a *Attributes) zone() *time.Location {
	if a.Zone != nil {
		return a.Zone
	}
	return time.Local
}

// parseAttrTimeIn parses a '#' attribute value as a time in zone loc.
// It accepts the forms of the protocol manual and C-Kermit:
//
//	yyyymmdd hh:mm:ss   C-Kermit's form
//	yyyymmdd hh:mm:ss.n kerf's, to a kerf peer: 1 to 9 digits of the second
//	yyyymmdd hh:mm
//	yyyymmdd            midnight
//	yymmdd[ hh:mm[:ss]] two-digit years: 69..99 are 1969..1999, 00..68 are 2000..2068
//
// A 'T' may stand for the space and the date may be written yyyy-mm-dd;
// surrounding spaces are ignored. Out-of-range fields (month 13, Feb 30,
// 24:00) are errors.
func parseAttrTimeIn(s string, loc *time.Location) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("%w: unreadable date %q", ErrBadAttributes, s)
	}
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	digits := func(n int) (int, bool) {
		if len(s) < n {
			return 0, false
		}
		v := 0
		for i := 0; i < n; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		s = s[n:]
		return v, true
	}
	skip := func(c byte) bool {
		if len(s) > 0 && s[0] == c {
			s = s[1:]
			return true
		}
		return false
	}

	// Date: yyyymmdd, yyyy-mm-dd or yymmdd.
	var year, month, day int
	var ok bool
	dateLen := 0
	for dateLen < len(s) && s[dateLen] >= '0' && s[dateLen] <= '9' {
		dateLen++
	}
	switch {
	case dateLen == 8:
		year, _ = digits(4)
		month, _ = digits(2)
		day, _ = digits(2)
	case dateLen == 6:
		year, _ = digits(2)
		month, _ = digits(2)
		day, _ = digits(2)
		if year >= 69 {
			year += 1900
		} else {
			year += 2000
		}
	case dateLen == 4 && len(s) > 4 && s[4] == '-':
		year, _ = digits(4)
		if !skip('-') {
			return bad()
		}
		if month, ok = digits(2); !ok || !skip('-') {
			return bad()
		}
		if day, ok = digits(2); !ok {
			return bad()
		}
	default:
		return bad()
	}

	// Optional time: hh:mm or hh:mm:ss after ' ' or 'T'.
	var hour, minute, sec, nsec int
	if len(s) > 0 {
		if !skip(' ') && !skip('T') {
			return bad()
		}
		if hour, ok = digits(2); !ok || !skip(':') {
			return bad()
		}
		if minute, ok = digits(2); !ok {
			return bad()
		}
		if skip(':') {
			if sec, ok = digits(2); !ok {
				return bad()
			}
			if skip('.') {
				// kerf's fraction of a second: 1 to 9 digits.
				n := 0
				for n < len(s) && n < 10 && s[n] >= '0' && s[n] <= '9' {
					n++
				}
				if n == 0 || n > 9 {
					return bad()
				}
				nsec, _ = digits(n)
				for ; n < 9; n++ {
					nsec *= 10
				}
			}
		}
		if len(s) > 0 {
			return bad()
		}
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return bad()
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, loc)
	if t.Day() != day { // Feb 30 and the like normalise into the next month
		return bad()
	}
	return t, nil
}

// AttrReply is the receiver's answer to an A packet: the data field of its
// ACK (ckcfn3.c gattr()/rsattr(), gkermit.c).
//
//	""                 accept
//	"N" + tags         refuse; tags name the attributes that caused it
//	                   ('1' or '!' size, '"' type, '#' date, '+' disposition,
//	                   '*' encoding, '?' name/collision, ...)
//	"1" tochar(len) n  accept a recovery (RESEND): the receiver already
//	                   has n bytes; the sender continues from there
//
// The zero AttrReply is a refusal without reasons; NewAttrReply gives an
// acceptance.
type AttrReply struct {
	Accept   bool
	Reasons  string // refusal tags, e.g. "?" or "#"
	ResumeAt int64  // -1 none; encodes as '1' tochar(len) decimal
}

// NewAttrReply returns a plain acceptance: Accept true, ResumeAt -1.
func NewAttrReply() AttrReply { return AttrReply{Accept: true, ResumeAt: -1} }

// Marshal returns the data field of the ACK: "N"+Reasons when refusing,
// "1"+tochar(len)+decimal when accepting with ResumeAt >= 0, else empty.
func (r AttrReply) Marshal() []byte {
	switch {
	case !r.Accept:
		return append([]byte{'N'}, r.Reasons...)
	case r.ResumeAt >= 0:
		d := strconv.AppendInt(nil, r.ResumeAt, 10)
		return append([]byte{AttrLength, kchar(len(d))}, d...)
	default:
		return []byte{}
	}
}

// ParseAttrReply decodes the data field of the ACK to an A packet.
//
//   - Empty data, or data starting with 'Y', is an acceptance.
//   - 'N' followed by tags is a refusal with those Reasons (possibly none).
//   - '1' tochar(len) decimal is an acceptance with ResumeAt set. A negative
//     number — C-Kermit answers "1\"-1" when it has no file to recover —
//     means the receiver has nothing: ResumeAt 0, and so does an empty
//     number. A missing or bad count, a count running past the end, or a
//     value that is not a decimal int64 is an error wrapping
//     ErrBadAttrReply; bytes after the number are ignored.
//   - A lone '"' is G-Kermit 2.01's refusal for the file type (it omits the
//     'N'): Accept false, Reasons "\"".
//   - Anything else is an acceptance, as C-Kermit's sender reads it.
func ParseAttrReply(data []byte) (AttrReply, error) {
	switch {
	case len(data) == 0, data[0] == 'Y':
		return NewAttrReply(), nil
	case data[0] == 'N':
		return AttrReply{Reasons: string(data[1:]), ResumeAt: -1}, nil
	case len(data) == 1 && data[0] == '"':
		return AttrReply{Reasons: `"`, ResumeAt: -1}, nil
	case data[0] == AttrLength:
		if len(data) < 2 {
			return AttrReply{}, fmt.Errorf("%w: recovery length without a count", ErrBadAttrReply)
		}
		n, ok := dec94(data[1])
		if !ok || 2+n > len(data) {
			return AttrReply{}, fmt.Errorf("%w: recovery length %q cut short", ErrBadAttrReply, data)
		}
		v := data[2 : 2+n]
		neg := len(v) > 0 && v[0] == '-'
		if neg {
			v = v[1:]
		}
		x, ok := parseDecimal(v)
		if !ok && len(v) > 0 {
			return AttrReply{}, fmt.Errorf("%w: recovery length %q is not a number", ErrBadAttrReply, data[2:2+n])
		}
		if neg {
			x = 0
		}
		return AttrReply{Accept: true, ResumeAt: x}, nil
	default:
		return NewAttrReply(), nil
	}
}
