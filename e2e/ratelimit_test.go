package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// --limit-rate holds a transfer to its rate: a send and a get over two
// sessions (one limit for both), a classic send (the data in the control
// connection), and a server's own limit. Each copy is checked, and each
// run must take at least the time its bytes take at the rate, less the
// twentieth of a second the limit lets go at once: a lower bound the
// limit makes certain, whatever the machine's speed.
func TestLimitRate(t *testing.T) {
	const rate = 1 << 20 // --limit-rate 1M
	const fileSize = 384 << 10
	local, back := t.TempDir(), t.TempDir()
	for i := range 4 {
		writeFile(t, filepath.Join(local, "tree", fmt.Sprintf("f%d.bin", i)), randomBytes(fileSize, uint64(i)))
	}
	atLeast := func(t *testing.T, what string, bytes int, took time.Duration) {
		t.Helper()
		if min := time.Duration(float64(bytes-rate/20) / rate * float64(time.Second)); took < min {
			t.Errorf("%s of %d bytes at --limit-rate 1M took %v, less than the %v the rate allows", what, bytes, took, min)
		}
	}
	sameTree := func(t *testing.T, dir string) {
		t.Helper()
		for i := range 4 {
			name := fmt.Sprintf("tree/f%d.bin", i)
			sameFile(t, filepath.Join(local, name), filepath.Join(dir, name))
		}
	}

	t.Run("client", func(t *testing.T) {
		root := t.TempDir()
		srv := startServer(t, root, serverOpts{})
		start := time.Now()
		mustRun(t, srv, local, nil, "send", "-r", "--sessions", "2", "--limit-rate", "1M", "tree", srv.addr)
		atLeast(t, "send -r --sessions 2", 4*fileSize, time.Since(start))
		sameTree(t, root)
		start = time.Now()
		mustRun(t, srv, back, nil, "get", "-r", "--sessions", "2", "--limit-rate", "1M", target(srv.addr, "tree"), ".")
		atLeast(t, "get -r --sessions 2", 4*fileSize, time.Since(start))
		sameTree(t, back)
	})
	t.Run("classic", func(t *testing.T) {
		root := t.TempDir()
		srv := startServer(t, root, serverOpts{classic: true})
		start := time.Now()
		mustRun(t, srv, local, nil, "send", "--classic", "--limit-rate", "1M", "tree/f0.bin", "tree/f1.bin", srv.addr)
		atLeast(t, "send --classic", 2*fileSize, time.Since(start))
		for i := range 2 {
			sameFile(t, filepath.Join(local, "tree", fmt.Sprintf("f%d.bin", i)), filepath.Join(root, fmt.Sprintf("f%d.bin", i)))
		}
	})
	t.Run("server", func(t *testing.T) {
		root, dst := t.TempDir(), t.TempDir()
		srv := startServer(t, root, serverOpts{args: []string{"--limit-rate", "1M"}})
		start := time.Now()
		mustRun(t, srv, local, nil, "send", "-r", "tree", srv.addr)
		atLeast(t, "send -r to a limited server", 4*fileSize, time.Since(start))
		sameTree(t, root)
		start = time.Now()
		mustRun(t, srv, dst, nil, "get", "-r", target(srv.addr, "tree"), ".")
		atLeast(t, "get -r from a limited server", 4*fileSize, time.Since(start))
		sameTree(t, dst)
	})
	// A slow transfer that moves is no silent server: one 1 MiB block
	// takes several idle timeouts at this rate, and the watchdog sees
	// the bytes go within it. (It killed such transfers, counting whole
	// blocks only.)
	t.Run("slow, not idle", func(t *testing.T) {
		root, dst := t.TempDir(), t.TempDir()
		srv := startServer(t, root, serverOpts{})
		writeFile(t, filepath.Join(local, "slow.bin"), randomBytes(256<<10, 9))
		mustRun(t, srv, local, nil, "send", "--limit-rate", "64k", "--idle-timeout", "1s", "slow.bin", srv.addr)
		sameFile(t, filepath.Join(local, "slow.bin"), filepath.Join(root, "slow.bin"))
		mustRun(t, srv, dst, nil, "get", "--limit-rate", "64k", "--idle-timeout", "1s", target(srv.addr, "slow.bin"), ".")
		sameFile(t, filepath.Join(local, "slow.bin"), filepath.Join(dst, "slow.bin"))
	})
	t.Run("bad", func(t *testing.T) {
		r := run(t, nil, local, nil, "send", "--limit-rate", "fast", "tree/f0.bin", "127.0.0.1:1/")
		if r.code != 2 {
			t.Errorf("--limit-rate fast: %s; want exit 2", r)
		}
	})
}
