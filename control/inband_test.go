package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"kerf/control"
	"kerf/filestore"
)

// Where only the control port gets through (here the data listener is
// on another address than the one the client reached, so its port
// refuses), a client says so and names --in-band; one with InBand
// moves the files on the control connection, under TLS.
func TestInBandWhereTheDataPortIsUnreachable(t *testing.T) {
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServerWith(t, root, func(c *control.ServerConfig) { c.DataAddr = "127.0.0.2:0" })
	specs := map[string][]byte{"big.bin": rnd(3<<20+7, 5), "dir/small.txt": []byte("small\n"), "empty": nil}
	out := files(t, src, specs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cl, err := control.Dial(ctx, clientConfig(srv, nil))
	if err != nil {
		t.Fatal(err)
	}
	err = cl.Send(ctx, out)
	cl.Close()
	if err == nil || !strings.Contains(err.Error(), "data port cannot be reached") || !strings.Contains(err.Error(), "--in-band") {
		t.Fatalf("send with the data port refused: %v; want the reason and --in-band", err)
	}

	cl, err = control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) { c.InBand = true }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, out); err != nil {
		t.Fatalf("send in-band: %v", err)
	}
	if cl.Dual() {
		t.Fatal("an in-band client opened data connections")
	}
	checkStored(t, root, specs)
	store, err := filestore.Open(back)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := cl.Get(ctx, "dir", true, store); err != nil {
		t.Fatalf("get -r in-band: %v", err)
	}
	if err := cl.Get(ctx, "big.bin", false, store); err != nil {
		t.Fatalf("get in-band: %v", err)
	}
	checkStored(t, back, map[string][]byte{"big.bin": specs["big.bin"], "dir/small.txt": specs["dir/small.txt"]})
	if list, err := cl.Generic(ctx, 'D', "dir"); err != nil || !strings.Contains(list, "small.txt") {
		t.Errorf("ls in-band: %q %v", list, err)
	}
}
