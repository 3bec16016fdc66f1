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
		{fmt.Errorf("get: %w", &RefusedGetError{&PeerError{Msg: "kerf: nonexist: no such file or directory"}}), false},
		// The server's word that its data path failed, mid-share.
		{fmt.Errorf("%w (%v)", &PeerError{Msg: "kermit: sending tree/f24: datachan: data connection lost"}, errors.New("kermit: data of tree/f24: connection lost")), true},
		{&LinkError{Op: "reading", Err: io.ErrUnexpectedEOF}, true},
		{fmt.Errorf("kermit: %w", ErrTooManyRetries), true},
		{errors.New("datachan: connection lost"), true},
	} {
		if got := lostGet(tc.err); got != tc.lost {
			t.Errorf("lostGet(%v) = %v, want %v", tc.err, got, tc.lost)
		}
	}
}
