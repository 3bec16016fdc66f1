package datachan

import (
	"strings"
	"testing"
)

func TestTokenStringParse(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || a == (Token{}) {
		t.Fatalf("tokens not random: %v %v", a, b)
	}
	s := a.String()
	if len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "" {
		t.Fatalf("String = %q", s)
	}
	for _, in := range []string{s, strings.ToUpper(s)} {
		got, err := ParseToken(in)
		if err != nil || got != a {
			t.Fatalf("ParseToken(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", s[:63], s + "0", "g" + s[1:], " " + s[1:]} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%q) accepted", bad)
		}
	}
}

func TestHelloBytes(t *testing.T) {
	var tok Token
	for i := range tok {
		tok[i] = byte(i)
	}
	var b [helloLen]byte
	putHello(&b, tok, 3)
	want := "KERFDATA\x01\x03" + string(tok[:])
	if string(b[:]) != want {
		t.Fatalf("hello = %q, want %q", b, want)
	}
	got, stream, status := parseHello(&b)
	if got != tok || stream != 3 || status != statusOK {
		t.Fatalf("parseHello = %v %d %d", got, stream, status)
	}
	b[8] = 2
	if _, _, status := parseHello(&b); status != statusBadVersion {
		t.Fatalf("version 2: status %d", status)
	}
	b[0] = 'k'
	if _, _, status := parseHello(&b); status != statusNoReply {
		t.Fatalf("bad magic: status %d", status)
	}
}
