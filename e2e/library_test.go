package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"kerf/auth"
	"kerf/control"
	"kerf/datachan"
	"kerf/filestore"
	"kerf/kermit"
)

// The corrupted-block case once more at the library level, where the
// data path's own counters can be read: a control.Server on 127.0.0.2
// (plaintext data allowed), the frame-aware proxy at its data port on
// 127.0.0.1, and an in-process control.Client. One bit of one payload is
// flipped each way; the client's datachan.Stats must show the resend
// (BlocksResent when it sends, BadBlocks when it receives) and the files
// must be identical.
func TestLibraryCorruptedBlockStats(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	users, err := auth.OpenUsers(filepath.Join(t.TempDir(), auth.UsersFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := users.Add(auth.User{Name: testUser, Secret: auth.HashPassword(testPassword, auth.Argon2Params{Memory: 64, Time: 1, Threads: 1})}); err != nil {
		t.Fatal(err)
	}
	id, err := auth.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	var srv *control.Server
	var data *proxy
	for attempt := 0; srv == nil; attempt++ {
		s, err := control.NewServer(control.ServerConfig{
			Root: root, Addr: "127.0.0.2:0", DataAddr: "127.0.0.2:0",
			Identity: id, Users: users, AllowPlainData: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		_, dport, _ := net.SplitHostPort(s.DataAddr().String())
		data, err = listenProxy("127.0.0.1:"+dport, s.DataAddr().String(), true)
		if err != nil {
			s.Close()
			if attempt < 5 {
				continue
			}
			t.Fatal(err)
		}
		srv = s
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { srv.Serve(ctx); close(served) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-served; data.close() })
	ctl, err := listenProxy("127.0.0.1:0", srv.Addr().String(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.close)

	dial := func() *control.Client {
		t.Helper()
		dctx, dcancel := context.WithTimeout(context.Background(), commandTimeout)
		defer dcancel()
		c, err := control.Dial(dctx, control.ClientConfig{
			Addr: ctl.ln.Addr().String(), User: testUser, Password: testPassword, PlainData: true,
			VerifyHost: func(addr, fp string) error { return nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	stats := func(c *control.Client) datachan.Stats {
		t.Helper()
		p, ok := c.Session().DataPath().(*datachan.Path)
		if !ok {
			t.Fatalf("no data channel (data path %T)", c.Session().DataPath())
		}
		return p.Stats()
	}

	const size = 1<<20 + 4321
	src := filepath.Join(local, "lib.bin")
	writeFile(t, src, randomBytes(size, 41))
	fi, _ := os.Stat(src)
	file := kermit.OutgoingFile{Name: "lib.bin", Size: size, ModTime: fi.ModTime(), Mode: 0o644,
		Open: func() (kermit.FileReader, error) { return os.Open(src) }}

	tctx, tcancel := context.WithTimeout(context.Background(), commandTimeout)
	defer tcancel()

	data.corruptUp.Store(1)
	c := dial()
	if err := c.Send(tctx, []kermit.OutgoingFile{file}); err != nil {
		t.Fatal(err)
	}
	st := stats(c)
	c.Close()
	if st.BlocksResent != 1 {
		t.Errorf("sender's stats after one damaged block: %+v, want BlocksResent 1", st)
	}
	sameFile(t, src, filepath.Join(root, "lib.bin"))

	data.corruptDn.Store(1)
	back := t.TempDir()
	store, err := filestore.Open(back)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c = dial()
	if err := c.Get(tctx, "lib.bin", false, store); err != nil {
		t.Fatal(err)
	}
	st = stats(c)
	c.Close()
	if st.BadBlocks != 1 || st.BlocksReceived != int64((size+datachan.DefaultBlockSize-1)/datachan.DefaultBlockSize) {
		t.Errorf("receiver's stats after one damaged block: %+v, want BadBlocks 1 and every block received once", st)
	}
	sameFile(t, src, filepath.Join(back, "lib.bin"))
	if _, _, corrupted := data.stats(); len(corrupted) != 2 {
		t.Errorf("the proxy damaged %d blocks, want 2", len(corrupted))
	}
}
