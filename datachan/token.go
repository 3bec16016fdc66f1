package datachan

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Token is a session's data-channel pairing secret. The server makes one
// per transfer with NewToken, registers it with Listener.Expect and sends
// it to the client over the control connection; the client presents it
// in the hello of every data connection.
type Token [32]byte

// NewToken returns a fresh random token from crypto/rand.
func NewToken() Token {
	var t Token
	rand.Read(t[:]) // never returns an error; it crashes the program instead
	return t
}

// String returns t as 64 lower-case hex digits, for logs and tests. (The
// Kermit Send-Init extension field carries it in unpadded base64url; see
// package control and docs/protocol.md §4.)
func (t Token) String() string { return hex.EncodeToString(t[:]) }

// ParseToken decodes 64 hex digits (either case).
func ParseToken(s string) (Token, error) {
	var t Token
	if len(s) != 2*len(t) {
		return Token{}, fmt.Errorf("datachan: token has %d characters, want %d hex digits", len(s), 2*len(t))
	}
	if _, err := hex.Decode(t[:], []byte(s)); err != nil {
		return Token{}, fmt.Errorf("datachan: bad token: %w", err)
	}
	return t, nil
}
