//go:build !unix

package serialfallback

// lineLock: UUCP lock files are a Unix convention.
type lineLock struct{}

func lockLine(string) (*lineLock, error) { return nil, nil }

func (*lineLock) release() {}
