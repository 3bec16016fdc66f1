package main

import (
	"regexp"
	"strings"
)

// packagePrefix matches the name of one of kerf's packages at the head
// of an error's part: where the message begins, or after ": " or "(".
var packagePrefix = regexp.MustCompile(`(^|: |\()(kermit|control|datachan|filestore|auth|framing|serialfallback|kerf): `)

// plainWords is an error message as a user reads it on the terminal:
// without the package names each layer put before its part (QA: "kerf:
// kermit: peer error: kerf: … (kermit: … datachan: …)"), which say
// where in kerf, not what. The peer's own text is said as the peer's.
// (--json keeps the words as they came: scripts may match them.)
func plainWords(msg string) string {
	msg = strings.Replace(msg, "kermit: peer error: ", "the peer says: ", 1)
	for {
		out := packagePrefix.ReplaceAllString(msg, "$1")
		if out == msg {
			return msg
		}
		msg = out
	}
}
