package main

import "strings"

// plainWords is an error message as a user reads it on the terminal: a
// peer's E said as the peer's (QA: "kerf: kermit: peer error: kerf: …").
// Only that fixed head is rewritten, with the one "kerf: " a kerf peer
// puts before its own words: kerf's layers' names further on stay,
// since a file may be called "kerf", "auth" or "control" (review: such
// a name went missing from its message).
func plainWords(msg string) string {
	rest, ok := strings.CutPrefix(msg, "kermit: peer error: ")
	if !ok {
		return msg
	}
	return "the peer says: " + strings.TrimPrefix(rest, "kerf: ")
}
