package control_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kerf/control"
	"kerf/filestore"
	"kerf/kermit"
)

// A data connection lost while its session pairs (reset on the way
// before the server read its hello) loses that session, whose share
// another session takes over, as one lost a moment later would be. The
// server, which waits for the connection until its token expires, must
// not be taken for refusing the GET (flaky-test hunt: the whole get
// failed, exit 4, while the other shares were recovered). With TLS the
// client's handshake meets the reset; plaintext, the client has written
// its hello and gone on, and hears of the loss from the server.
func TestDataConnLostWhilePairing(t *testing.T) {
	for _, dir := range []string{"get", "send"} {
		for _, plain := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/plain=%v", dir, plain), func(t *testing.T) {
				src, dst := t.TempDir(), t.TempDir()
				want := map[string][]byte{}
				os.MkdirAll(filepath.Join(src, "tree"), 0o755)
				for j := range 24 {
					name := fmt.Sprintf("tree/f%02d", j)
					want[name] = rnd(40000+j, int64(j))
					os.WriteFile(filepath.Join(src, name), want[name], 0o644)
				}
				root := src
				if dir == "send" {
					root = dst
				}
				srv := startServerWith(t, root, func(c *control.ServerConfig) {
					c.AllowPlainData = true
					control.LoseDataConns(c, 1)
				})
				ctx := ctxT(t)
				sessions, stores := pairLossClients(t, ctx, srv, dst, plain)
				var err error
				if dir == "get" {
					err = kermit.GetParallel(ctx, sessions, "tree", kermit.GetOptions{Recursive: true}, stores)
				} else {
					local, oerr := filestore.Open(src)
					if oerr != nil {
						t.Fatal(oerr)
					}
					defer local.Close()
					files, merr := local.Match("tree", true)
					if merr != nil {
						t.Fatal(merr)
					}
					err = kermit.SendParallel(ctx, sessions, files)
				}
				if err != nil {
					t.Fatalf("%s: %v", dir, err)
				}
				if n := control.LostDataConns(srv); n < 1 {
					t.Fatalf("%d data connections lost: the test tested nothing", n)
				}
				checkStored(t, dst, want)
			})
		}
	}
}

// pairLossClients logs three sessions in to srv, each with one data
// connection and a store in dst.
func pairLossClients(t *testing.T, ctx context.Context, srv *control.Server, dst string, plain bool) ([]*kermit.Session, []kermit.Store) {
	t.Helper()
	var sessions []*kermit.Session
	var stores []kermit.Store
	for range 3 {
		cl, err := control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) {
			c.PlainData = plain
			c.Streams = 1
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		store, err := filestore.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		sessions, stores = append(sessions, cl.Session()), append(stores, store)
	}
	return sessions, stores
}

// A client that asks for more data connections than the server allows
// goes on with what it is given, and says so once a process, as a
// warning (a client prints those); one that left the number to kerf does
// not (QA q: --streams 32 against a server's 8 was cut without a word;
// QA y: it was said at info, which a client does not print; review 50:
// once a client was once a session of --sessions N).
func TestFewerStreamsThanAskedSaid(t *testing.T) {
	root := t.TempDir()
	srv := startServerWith(t, root, func(c *control.ServerConfig) { c.MaxStreams = 2 })
	for _, asked := range []int{8, 0} {
		control.ForgetFewerStreamsSaid()
		var log syncBuf
		cl, err := control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) {
			c.Streams = asked
			c.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := cl.Send(ctxT(t), []kermit.OutgoingFile{memFile("s.bin", rnd(100000, 1))}); err != nil {
				t.Fatal(err)
			}
		}
		cl.Close()
		// A second client of the process (another session of
		// --sessions N, a reconnection) says nothing more.
		cl2, err := control.Dial(ctxT(t), clientConfig(srv, func(c *control.ClientConfig) {
			c.Streams = asked
			c.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl2.Send(ctxT(t), []kermit.OutgoingFile{memFile("s2.bin", rnd(100000, 2))}); err != nil {
			t.Fatal(err)
		}
		cl2.Close()
		n := strings.Count(log.String(), "fewer data connections than asked")
		if said := n > 0; said != (asked > 0) || n > 1 {
			t.Errorf("--streams %d against a server's 2: said %d times, want it said (once) %v; log:\n%s", asked, n, asked > 0, log.String())
		}
	}
}
