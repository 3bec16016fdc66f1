package control

import (
	"path/filepath"
	"strings"
)

// PrivateWithin returns the first of private (the server's state
// directory, its key file) that lies in the directory root or is it, or
// "". Both are taken with symbolic links resolved where they exist: a
// session whose root holds the server's key or users file could read
// the one and rewrite the other, and so give itself any root (QA: a
// server run with --root at a home directory served its own
// ~/.config/kerf/server).
func PrivateWithin(root string, private []string) string {
	r := resolved(root)
	for _, p := range private {
		if p == "" {
			continue
		}
		q := resolved(p)
		if q == r || strings.HasPrefix(q, strings.TrimSuffix(r, string(filepath.Separator))+string(filepath.Separator)) {
			return p
		}
	}
	return ""
}

// resolved is p absolute, clean, and with its links resolved as far as
// it exists.
func resolved(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if e, err := filepath.EvalSymlinks(a); err == nil {
		return e
	}
	// Not there (yet): its nearest existing parent, resolved.
	dir, base := filepath.Split(a)
	if dir == a || dir == "" {
		return a
	}
	return filepath.Join(resolved(filepath.Clean(dir)), base)
}
