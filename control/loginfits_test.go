package control_test

import (
	"strings"
	"testing"

	"kerf/control"
)

// What user add and passwd refuse is what the client could not send.
func TestLoginFits(t *testing.T) {
	if !control.LoginFits("alice", "correct horse battery staple") {
		t.Error("an ordinary login does not fit")
	}
	if control.LoginFits("longpw", strings.Repeat("p", 100)) {
		t.Error("a 100-byte password fits")
	}
	if control.LoginFits(strings.Repeat("u", 60), strings.Repeat("t", 43)) {
		t.Error("a 60-byte name and a token fit")
	}
	if control.LoginFits("bob", strings.Repeat("é", 30)) {
		t.Error("60 bytes above 127 fit (each goes as 3)")
	}
}
