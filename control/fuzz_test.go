package control

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/auth"
	"kerf/filestore"
	"kerf/kermit"
)

// fuzzConn feeds a server the fuzzer's bytes as the client's, then EOF;
// what the server writes is dropped. Like a real client it says one
// packet at a time and waits for the answer (or, as when streaming, a
// moment) before the next, so that a recorded session replays.
type fuzzConn struct {
	r     *bytes.Reader
	wrote chan struct{} // the server answered
	reads int
}

func newFuzzConn(data []byte) *fuzzConn {
	return &fuzzConn{r: bytes.NewReader(data), wrote: make(chan struct{}, 1)}
}

// fuzzPacedReads bounds the paced reads of one input (2ms each at most):
// a recorded session needs a few dozen; past them the rest comes at once.
const fuzzPacedReads = 200

func (c *fuzzConn) Read(p []byte) (int, error) {
	if c.reads >= fuzzPacedReads {
		return c.r.Read(p)
	}
	if c.reads > 0 {
		select {
		case <-c.wrote:
		case <-time.After(2 * time.Millisecond):
		}
	}
	c.reads++
	rest := make([]byte, c.r.Len())
	c.r.ReadAt(rest, c.r.Size()-int64(c.r.Len()))
	// Up to just before the next packet mark after the first byte.
	n := len(rest)
	if i := bytes.IndexByte(rest[min(1, len(rest)):], 1); i >= 0 {
		n = i + 1
	}
	return c.r.Read(p[:min(len(p), n)])
}

func (c *fuzzConn) Write(p []byte) (int, error) {
	select {
	case c.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}
func (c *fuzzConn) Close() error        { return nil }
func (c *fuzzConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1649} }
func (c *fuzzConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// The fuzz server's one account: a token (fast to check) so that inputs
// that log in cost no hashing.
const (
	fuzzUser  = "fuzz"
	fuzzToken = "fuzz-token"
)

var fuzzIdentity = sync.OnceValue(func() *auth.Identity {
	id, err := auth.NewIdentity()
	if err != nil {
		panic(err)
	}
	return id
})

// fuzzUsers is an Authenticator holding the one token account.
type fuzzUsers struct{}

func (fuzzUsers) Authenticate(name, pw string) (auth.User, error) {
	if name == fuzzUser && pw == fuzzToken {
		return auth.User{Name: fuzzUser}, nil
	}
	return auth.User{}, auth.ErrLoginFailed
}

// recordClient runs a real classic client session (login, send, get,
// listing, cd, mkdir, rename, delete, finish) against a server on
// loopback and returns the bytes the client sent: a seed that reaches
// deep into the server.
func recordClient(t testing.TB, login bool) []byte {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "x.txt"), []byte("served file\n"), 0o644)
	srv, err := NewServer(ServerConfig{Root: root, Addr: "127.0.0.1:0", Identity: fuzzIdentity(), Users: fuzzUsers{},
		AllowClassic: true, Anonymous: !login, Throttle: &auth.Throttle{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go srv.Serve(ctx)
	defer srv.Close()
	// A proxy records what the client says.
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	var rec bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() {
		c, err := pl.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			return
		}
		defer s.Close()
		go io.Copy(c, s)
		io.Copy(io.MultiWriter(s, &rec), c)
	})
	cfg := ClientConfig{Addr: pl.Addr().String(), Classic: true}
	if login {
		cfg.User, cfg.Password = fuzzUser, fuzzToken
	}
	cl, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(base, "up.txt")
	os.WriteFile(src, []byte("uploaded\n"), 0o644)
	cl.Send(ctx, []kermit.OutgoingFile{{Name: "up.txt", Size: 9, ModTime: time.Now(), Mode: 0o644,
		Open: func() (kermit.FileReader, error) { return os.Open(src) }}})
	store, _ := filestore.Open(filepath.Join(base, "back"))
	cl.Get(ctx, "d", true, store)
	for _, g := range [][]string{{"D", ""}, {"C", "d"}, {"A"}, {"m", "new"}, {"R", "x.txt", "y.txt"}, {"E", "y.txt"}, {"D", "../.."}} {
		cl.Generic(ctx, g[0][0], g[1:]...)
	}
	cl.Session().Finish(ctx)
	cl.Close()
	wg.Wait()
	return rec.Bytes()
}

// FuzzServerSession drives a whole server session — first-byte sniffing,
// REMOTE LOGIN, every command — from arbitrary client bytes, and checks
// that it ends when the bytes do and that nothing outside the root was
// touched.
func FuzzServerSession(f *testing.F) {
	f.Add(recordClient(f, true))
	f.Add(recordClient(f, false))
	f.Add([]byte{0x16, 3, 1, 0, 5, 1, 0, 0, 1, 0})
	f.Add([]byte("kermit -ir\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		base := t.TempDir()
		root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
		os.MkdirAll(filepath.Join(root, "d"), 0o755)
		os.MkdirAll(outside, 0o755)
		os.WriteFile(filepath.Join(root, "d", "x.txt"), []byte("served file\n"), 0o644)
		os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
		os.Symlink(outside, filepath.Join(root, "link"))
		s := &Server{cfg: withDefaults(ServerConfig{Root: root, Identity: fuzzIdentity(), Users: fuzzUsers{},
			AllowClassic: true, Throttle: &auth.Throttle{}, MaxLoginAttempts: 1000}), perAddr: map[string]int{},
			freeAfter: idleFreeAfter, freeMemory: func() {}}
		s.tlsConf = controlTLS(s.cfg.Identity)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { s.handle(ctx, newFuzzConn(data), nil); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the session did not end when the client's bytes did")
		}
		ents, _ := os.ReadDir(base)
		if len(ents) != 2 {
			t.Errorf("something appeared beside the root: %v", ents)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 1 {
			t.Errorf("the outside directory changed: %v", ents)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret" {
			t.Errorf("the outside file changed")
		}
	})
}
