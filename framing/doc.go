// Package framing holds kerf's wire codecs: Kermit packets (normal and
// long, block checks 1/2/3), data-field prefixing (control, 8th-bit,
// repeat), Send-Init parameters, attribute packets and the data-channel
// block format. It performs no I/O and keeps no session state: callers
// hand it bytes and get bytes or values back.
package framing
