package control_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/auth"
	"kerf/control"
	"kerf/datachan"
	"kerf/filestore"
)

// Test accounts: argon2id at the lowest cost, so that -race stays fast.
var (
	testArgon  = auth.Argon2Params{Memory: 64, Time: 1, Threads: 1}
	testUser   = "alice"
	testPass   = "correct horse"
	identityMu sync.Mutex
	identity   *auth.Identity
)

// testIdentity is one self-signed identity shared by the tests.
func testIdentity(t testing.TB) *auth.Identity {
	identityMu.Lock()
	defer identityMu.Unlock()
	if identity == nil {
		id, err := auth.NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		identity = id
	}
	return identity
}

// testUsers makes a users file in a fresh state directory holding
// alice (read-write, the server's root) and any extra entries.
func testUsers(t testing.TB, extra ...auth.User) *auth.UsersFile {
	t.Helper()
	u, err := auth.OpenUsers(filepath.Join(t.TempDir(), auth.UsersFileName))
	if err != nil {
		t.Fatal(err)
	}
	all := append([]auth.User{{Name: testUser, Secret: auth.HashPassword(testPass, testArgon)}}, extra...)
	for _, e := range all {
		if err := u.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// startServerWith starts a TLS server on loopback serving root, with the
// test users; mod adjusts the configuration first.
func startServerWith(t testing.TB, root string, mod func(*control.ServerConfig)) *control.Server {
	t.Helper()
	cfg := control.ServerConfig{
		Root: root, Addr: "127.0.0.1:0", Identity: testIdentity(t), Users: testUsers(t),
		Throttle: &auth.Throttle{Base: time.Millisecond, Max: 10 * time.Millisecond, Forget: time.Minute},
		// Loopback copies by default: plaintext data paths of these
		// tests take sendfile, e2e's the default.
		PathOpts: []datachan.Option{datachan.WithSendfile(datachan.SendfileAlways)},
	}
	if mod != nil {
		mod(&cfg)
	}
	if os.Getenv("KERF_TEST_LOG") != "" {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := control.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-done })
	return srv
}

// pin is a VerifyHost that accepts exactly fp.
func pin(fp string) func(addr, got string) error {
	return func(addr, got string) error {
		if got != fp {
			return fmt.Errorf("%w: %s presented %s, pinned %s", auth.ErrHostKeyChanged, addr, got, fp)
		}
		return nil
	}
}

// clientConfig is a client of srv logged in as the test user.
func clientConfig(srv *control.Server, mod func(*control.ClientConfig)) control.ClientConfig {
	c := control.ClientConfig{Addr: srv.Addr().String(), User: testUser, Password: testPass, VerifyHost: pin(srv.Fingerprint()),
		PathOpts: []datachan.Option{datachan.WithSendfile(datachan.SendfileAlways)}}
	if mod != nil {
		mod(&c)
	}
	return c
}

// checkStored fails t unless dir holds each file of files, byte for byte.
func checkStored(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("copy of %s in %s differs (%v)", name, dir, err)
		}
	}
}

// getInto fetches name from cl's server into dir and checks it is want.
func getInto(t testing.TB, ctx context.Context, cl *control.Client, dir, name string, want []byte) {
	t.Helper()
	store, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := cl.Get(ctx, name, false, store); err != nil {
		t.Fatal(err)
	}
	checkStored(t, dir, map[string][]byte{name: want})
}

// serveEach accepts connections on ln until it is closed, each handled
// by handle in a goroutine of its own: a fake peer.
func serveEach(ln net.Listener, handle func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
}
