//go:build !unix

package serialfallback

import "errors"

// ErrLineLocked is wrapped by Open's error when another live process
// holds the line's lock file (Unix only).
var ErrLineLocked = errors.New("serialfallback: line in use")

// lineLock: UUCP lock files are a Unix convention.
type lineLock struct{}

func lockLine(string) (*lineLock, error) { return nil, nil }

func (*lineLock) release() {}
