package kermit_test

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kerf/filestore"
	"kerf/internal/testproc"
	"kerf/kermit"
)

// A fetching client's congestion control is the server's for what it
// sends (the sender's is what counts: QA, get --congestion bbr changed
// nothing); one the server will not use is noted once, and the GET goes
// on with the server's own.
func TestGetAsksForCongestion(t *testing.T) {
	cc := testproc.AllowedCongestion(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "f.bin"), randomBytes(100_000, 4), 0o644)
	for _, asked := range []string{cc, "no-such-cc"} {
		t.Run(asked, func(t *testing.T) {
			var clog syncBuf
			ccfg := kermit.DefaultConfig()
			ccfg.Log = slog.New(slog.NewTextHandler(&clog, nil))
			var srvData net.Conn // the server's end of the data connection
			cli, ctx := servedClientWith(t, root, ccfg, func(c net.Conn) net.Conn { srvData = c; return c })
			dst := t.TempDir()
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if err := cli.GetWith(ctx, "f.bin", kermit.GetOptions{Congestion: asked}, store); err != nil {
				t.Fatal(err)
			}
			checkFiles(t, dst, []testFile{{"f.bin", randomBytes(100_000, 4)}})
			refused := strings.Contains(clog.String(), "own TCP congestion control")
			if got := congestionOfConn(t, srvData); asked == cc && (got != cc || refused) {
				t.Errorf("the server sends with %q (client log %q), want %q", got, clog.String(), cc)
			}
			if asked != cc && !refused {
				t.Errorf("an unknown congestion control was not noted: %q", clog.String())
			}
		})
	}
}

func congestionOfConn(t *testing.T, c net.Conn) string {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var gerr error
	raw.Control(func(fd uintptr) { name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return strings.TrimRight(name, "\x00")
}
