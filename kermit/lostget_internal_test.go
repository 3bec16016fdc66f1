package kermit

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

// Only a GET whose session was lost is taken over by another; a server's
// refusal would come again (it was taken over, and said "lost").
func TestLostGet(t *testing.T) {
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{nil, false},
		{&GroupError{Failed: []string{"a"}}, false},
		{fmt.Errorf("get: %w", &PeerError{Msg: "kerf: nonexist: no such file or directory"}), false},
		{&LinkError{Op: "reading", Err: io.ErrUnexpectedEOF}, true},
		{fmt.Errorf("kermit: %w", ErrTooManyRetries), true},
		{errors.New("datachan: connection lost"), true},
	} {
		if got := lostGet(tc.err); got != tc.lost {
			t.Errorf("lostGet(%v) = %v, want %v", tc.err, got, tc.lost)
		}
	}
}
