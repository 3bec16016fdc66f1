package control_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kerf/control"
	"kerf/filestore"
	"kerf/kermit"
)

// Names in F packets (files sent to the server) that must not land
// outside the root.
func TestTraversalInF(t *testing.T) {
	names := []string{
		"../escape.txt",
		"a/../../escape.txt",
		"sub/../../escape.txt",
		"..",
		"out/escape.txt",         // symlink to outside
		"sub/up/escape.txt",      // relative symlink to outside
		"f",                      // a symlink to the secret: must not be written through
		"zero",                   // symlink to a device
		"fifo",                   // a FIFO
		"ctl\x01name.txt",        // control character
		"esc\x1b[2Jname.txt",     // terminal escape
		strings.Repeat("n", 300), // element too long
	}
	for _, name := range names {
		t.Run(strings.ToValidUTF8(name[:min(len(name), 30)], "?"), func(t *testing.T) {
			j := newJail(t)
			before := snapshot(t, j.outside)
			srv := startServer(t, j.root)
			ctx := ctxT(t)
			cl := dialT(t, ctx, clientConfig(srv, nil))
			refused := false
			cl.Session().SetEvents(func(e kermit.Event) {
				if e.Kind == kermit.FileSkipped || e.Kind == kermit.FileFailed {
					t.Logf("refused: %v", e.Err)
					refused = true
				}
			})
			err := cl.Send(ctx, []kermit.OutgoingFile{memFile(name, []byte("EVIL"))})
			if err == nil && !refused {
				t.Errorf("send of %q was accepted", name)
			}
			j.untouched(t, before)
			if b, _ := os.ReadFile(filepath.Join(j.outside, "secret.txt")); string(b) != secret {
				t.Error("the secret was overwritten")
			}
		})
	}
}

// Filespecs in R (GET) and arguments of G commands that reach outside.
func TestTraversalInRAndG(t *testing.T) {
	cases := []struct {
		name string
		run  func(ctx context.Context, cl *control.Client, back string) error
	}{
		{"R ../outside/secret.txt", get("../outside/secret.txt", false)},
		{"R sub/../../outside/secret.txt", get("sub/../../outside/secret.txt", false)},
		{"R out/secret.txt", get("out/secret.txt", false)},
		{"R sub/up/secret.txt", get("sub/up/secret.txt", false)},
		{"R f (symlink)", get("f", false)},
		{"R zero (device)", get("zero", false)},
		{"R fifo", get("fifo", false)},
		{"R out/* (wildcard through a link)", get("out/*", false)},
		{"R absolute host path", get(filepath.Join("/", "..", "outside", "secret.txt"), false)},
		{"V out (recursive through a link)", get("out", true)},
		{"R with control character", get("pub\x07.txt", false)},
		{"G D ..", generic('D', "..")},
		{"G D out (lists the link, not its target)", generic('D', "out")},
		{"G D sub/up", generic('D', "sub/up")},
		{"G D out/", generic('D', "out/")},
		{"G C ..", generic('C', "..")},
		{"G C out", generic('C', "out")},
		{"G E ../outside/secret.txt", generic('E', "../outside/secret.txt")},
		{"G E out/secret.txt", generic('E', "out/secret.txt")},
		{"G m ../newdir", generic('m', "../newdir")},
		{"G m out/newdir", generic('m', "out/newdir")},
		{"G d ../outside", generic('d', "../outside")},
		{"G R pub.txt ../stolen", generic('R', "pub.txt", "../stolen")},
		{"G R pub.txt out/stolen", generic('R', "pub.txt", "out/stolen")},
		{"G R out/secret.txt mine", generic('R', "out/secret.txt", "mine")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newJail(t)
			before := snapshot(t, j.outside)
			srv := startServer(t, j.root)
			ctx := ctxT(t)
			cl := dialT(t, ctx, clientConfig(srv, nil))
			back := filepath.Join(j.base, "back")
			err := tc.run(ctx, cl, back)
			var pe *kermit.PeerError
			switch {
			case errors.As(err, &pe):
				t.Logf("refused: %s", pe.Msg)
				if strings.Contains(tc.name, "(symlink)") && !strings.Contains(pe.Msg, "leads outside your directory") {
					// security.md §5's words, not "not a regular file".
					t.Errorf("refusal of a link leading out: %q", pe.Msg)
				}
			case err == nil && strings.HasPrefix(tc.name, "G D"):
				// A listing of the link itself is fine; generic() fails
				// if it shows what lies behind it.
			default:
				t.Fatalf("err = %v, want the server's refusal (E packet)", err)
			}
			j.untouched(t, before)
			noSecret(t, back)
			noSecret(t, j.root)
			// The session survives the refusal.
			if _, err := cl.Generic(ctx, 'D', ""); err != nil {
				t.Errorf("session unusable after the refusal: %v", err)
			}
		})
	}
}

func get(spec string, recursive bool) func(context.Context, *control.Client, string) error {
	return func(ctx context.Context, cl *control.Client, back string) error {
		store, err := filestore.Open(back)
		if err != nil {
			return err
		}
		defer store.Close()
		return cl.Get(ctx, spec, recursive, store)
	}
}

func generic(cmd byte, args ...string) func(context.Context, *control.Client, string) error {
	return func(ctx context.Context, cl *control.Client, _ string) error {
		reply, err := cl.Generic(ctx, cmd, args...)
		if strings.Contains(reply, "secret") {
			return errors.New("the reply shows what is outside the root: " + reply)
		}
		return err
	}
}

// hostileFS is a server that sends files under names chosen to escape
// the client's destination.
type hostileFS struct {
	kermit.ServerFS
	names []string
}

func (h *hostileFS) Login(string, string) error { return nil }
func (h *hostileFS) Authorized(string) error    { return nil }
func (h *hostileFS) Match(string, bool) ([]kermit.OutgoingFile, error) {
	var out []kermit.OutgoingFile
	for _, n := range h.names {
		out = append(out, memFile(n, []byte("EVIL from the server")))
	}
	return out, nil
}

// startHostile runs a TLS Kermit server that answers every GET with
// files named names.
func startHostile(t *testing.T, names []string) (addr, fingerprint string) {
	id := testIdentity(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", id.ServerTLS())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	serveEach(ln, func(c net.Conn) {
		defer c.Close()
		kc := kermit.DefaultConfig()
		kc.Streaming = true
		s := kermit.NewSession(c, kc)
		defer s.Close()
		s.Serve(context.Background(), &hostileFS{names: names})
	})
	return ln.Addr().String(), id.Fingerprint
}

// Names a server returns to a client: whatever they are, the client
// writes only inside the destination it named.
func TestClientConfinedAgainstHostileServer(t *testing.T) {
	names := []string{
		"../evil1", "a/../../evil2", "/abs/evil3", "//evil4", "sub/../../../evil5",
		"link/evil6", "ctl\x01evil7", "..", ".", "", "x/" + strings.Repeat("../", 20) + "evil8",
	}
	for _, name := range names {
		t.Run(strings.ToValidUTF8(name, "?"), func(t *testing.T) {
			base := t.TempDir()
			dest, outside := filepath.Join(base, "dest"), filepath.Join(base, "outside")
			must(t, os.MkdirAll(dest, 0o755))
			must(t, os.MkdirAll(outside, 0o755))
			must(t, os.Symlink(outside, filepath.Join(dest, "link")))
			addr, fp := startHostile(t, []string{name})
			ctx := ctxT(t)
			cl := dialT(t, ctx, control.ClientConfig{Addr: addr, User: "u", Password: "p", VerifyHost: pin(fp)})
			store, err := filestore.Open(dest)
			must(t, err)
			defer store.Close()
			err = cl.Get(ctx, "anything", false, store)
			t.Logf("%q: %v", name, err)
			// Nothing outside dest, nothing in the outside directory.
			ents, _ := os.ReadDir(base)
			for _, e := range ents {
				if e.Name() != "dest" && e.Name() != "outside" {
					t.Errorf("client wrote %s outside its destination", e.Name())
				}
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("client wrote %s through a symlink", ents[0].Name())
			}
			if _, err := os.Stat("/abs/evil3"); err == nil {
				t.Error("client wrote /abs/evil3")
			}
			// Anything written is inside dest.
			filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					if rel, _ := filepath.Rel(dest, p); strings.HasPrefix(rel, "..") {
						t.Errorf("wrote %s", p)
					}
				}
				return nil
			})
		})
	}
}

// Entries no transfer would store under their names, but which are in
// the tree all the same, can be named to remove and to rename (to a
// name a transfer takes), and a path longer than the system's 4,096
// bytes, which the tree's walks list and serve, can be named to fetch
// and remove (QA: each was refused). A name to make stays checked.
func TestExistingNamesReachable(t *testing.T) {
	j := newJail(t)
	for _, n := range []string{"nl\nname", "back\\slash", "esc\x1b[31m"} {
		must(t, os.WriteFile(filepath.Join(j.root, n), []byte("x"), 0o644))
	}
	// A path of 51 elements of 95 bytes: made a directory at a time.
	r, err := os.OpenRoot(j.root)
	must(t, err)
	var deep []string
	for i := range 50 {
		deep = append(deep, fmt.Sprintf("d%094d", i))
		must(t, r.Mkdir(deep[len(deep)-1], 0o755))
		next, err := r.OpenRoot(deep[len(deep)-1])
		must(t, err)
		r.Close()
		r = next
	}
	must(t, r.WriteFile("f.txt", []byte("deep\n"), 0o644))
	r.Close()
	deepName := strings.Join(append(deep, "f.txt"), "/")
	if len(deepName) <= 4096 {
		t.Fatalf("the deep path is %d bytes, want more than 4096", len(deepName))
	}

	srv := startServer(t, j.root)
	ctx := ctxT(t)
	cl := dialT(t, ctx, clientConfig(srv, nil))
	for _, c := range []struct {
		cmd  byte
		args []string
	}{
		{'E', []string{"back\\slash"}},
		{'E', []string{"esc\x1b[31m"}},
		{'R', []string{"nl\nname", "fixed"}},
	} {
		if _, err := cl.Generic(ctx, c.cmd, c.args...); err != nil {
			t.Errorf("%c %q: %v", c.cmd, c.args, err)
		}
	}
	for _, n := range []string{"back\\slash", "esc\x1b[31m", "nl\nname"} {
		if _, err := os.Lstat(filepath.Join(j.root, n)); err == nil {
			t.Errorf("%q is still there", n)
		}
	}
	if b, err := os.ReadFile(filepath.Join(j.root, "fixed")); err != nil || string(b) != "x" {
		t.Errorf("fixed: %q, %v", b, err)
	}
	for _, c := range [][]string{{"R", "fixed", "bad\nname"}, {"m", "new\\dir"}} {
		var pe *kermit.PeerError
		if _, err := cl.Generic(ctx, c[0][0], c[1:]...); !errors.As(err, &pe) {
			t.Errorf("%q: %v, want the server's refusal", c, err)
		}
	}

	back := filepath.Join(j.base, "back")
	must(t, os.MkdirAll(back, 0o755))
	if err := get(deepName, false)(ctx, cl, back); err != nil {
		t.Fatalf("get of a %d-byte path: %v", len(deepName), err)
	}
	if b, err := os.ReadFile(filepath.Join(back, "f.txt")); err != nil || string(b) != "deep\n" {
		t.Errorf("fetched %q, %v", b, err)
	}
	if _, err := cl.Generic(ctx, 'E', deepName); err != nil {
		t.Errorf("rm of a %d-byte path: %v", len(deepName), err)
	}
}
