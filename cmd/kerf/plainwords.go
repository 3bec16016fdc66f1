package main

import "strings"

// plainWords is an error message as a user reads it on the terminal: a
// peer's E said as the peer's (QA: "kerf: kermit: peer error: kerf: …").
// Only that fixed head is rewritten, with the one "kerf: " a kerf peer
// puts before its own words: kerf's layers' names further on stay,
// since a file may be called "kerf", "auth" or "control" (review: such
// a name went missing from its message).
//
// The head may follow the command's own words ("rm NAME: kermit: peer
// error: kerf: …", QA ao), after a ": ".
func plainWords(msg string) string {
	const head = "kermit: peer error: "
	i := strings.Index(msg, head)
	if i < 0 || i > 0 && !strings.HasSuffix(msg[:i], ": ") {
		return msg
	}
	return msg[:i] + "the peer says: " + strings.TrimPrefix(msg[i+len(head):], "kerf: ")
}
