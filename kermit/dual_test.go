package kermit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/datachan"
	"kerf/filestore"
	"kerf/kermit"
)

// pipeDual joins two sessions' data paths over one loopback socket.
type pipeDual struct {
	conn net.Conn
	path *datachan.Path
}

func (d *pipeDual) Offer(string) string { return "test" }
func (d *pipeDual) Open(context.Context, string) (kermit.DataPath, error) {
	d.path = datachan.NewPath([]net.Conn{d.conn}, append([]datachan.Option{datachan.WithSendfile(dualSendfile)}, dualOpts...)...)
	return d.path, nil
}

// dualSendfile is when the tests' data paths send with sendfile. Their
// connections are loopback, where the default copies: they force
// sendfile, whose path (a block padded for a file that shrank, the
// doomed re-read) only these tests take through the engine; tests that
// matter on both paths run with each (eitherSendfile), and e2e and
// cmd/kerf run the default.
var dualSendfile = datachan.SendfileAlways

// dualOpts are more options for the tests' data paths (both ends).
var dualOpts []datachan.Option

// eitherSendfile runs f as two subtests: data paths sending with
// sendfile, and copying.
func eitherSendfile(t *testing.T, f func(t *testing.T)) {
	defer func(s datachan.Sendfile) { dualSendfile = s }(dualSendfile)
	for _, s := range []datachan.Sendfile{datachan.SendfileAlways, datachan.SendfileNever} {
		dualSendfile = s
		t.Run(map[datachan.Sendfile]string{datachan.SendfileAlways: "sendfile", datachan.SendfileNever: "copied"}[s], f)
	}
}

func dualPair(t *testing.T) (*pipeDual, *pipeDual) {
	a, b := link(t, 0, 1)
	return &pipeDual{conn: a.(*noisyConn).Conn}, &pipeDual{conn: b.(*noisyConn).Conn}
}

func dualTransfer(t *testing.T, scfg, rcfg kermit.Config, files []kermit.OutgoingFile, dst string) (kermit.Stats, error, error) {
	t.Helper()
	store, _ := filestore.Open(dst)
	defer store.Close()
	return dualTransferTo(t, scfg, rcfg, files, store)
}

// dualSessions makes a sending and a receiving session, closed when t
// ends, that agree on a data path over a loopback socket; wrap, if set,
// wraps the receiver's data connection.
func dualSessions(t *testing.T, scfg, rcfg kermit.Config, wrap func(net.Conn) net.Conn) (send, recv *kermit.Session) {
	a, b := link(t, 0, 1)
	da, db := dualPair(t)
	if wrap != nil {
		db.conn = wrap(db.conn)
	}
	scfg.Dual, rcfg.Dual = da, db
	scfg.Streaming, rcfg.Streaming = true, true
	send, recv = kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	t.Cleanup(func() { send.Close(); recv.Close() })
	return send, recv
}

// servedClient is a client session over a data path to a server
// session serving the directory root, until the test ends, and the
// context (a minute) to use it in.
func servedClient(t *testing.T, root string) (*kermit.Session, context.Context) {
	return servedClientWith(t, root, kermit.DefaultConfig(), nil)
}

// servedClientWith is servedClient with the client's configuration, and
// wrap, if set, wrapping the server's data connection (dualSessions).
func servedClientWith(t *testing.T, root string, ccfg kermit.Config, wrap func(net.Conn) net.Conn) (*kermit.Session, context.Context) {
	t.Helper()
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	cli, srv := dualSessions(t, ccfg, kermit.DefaultConfig(), wrap)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	go srv.Serve(ctx, dir)
	return cli, ctx
}

// transferEither sends files into store over a loopback link, with a
// data path (dual) or classic Kermit on the link alone; the tests of
// behaviour both paths share run it both ways.
func transferEither(t *testing.T, dual bool, scfg, rcfg kermit.Config, files []kermit.OutgoingFile, store kermit.Store) (serr, rerr error) {
	t.Helper()
	if dual {
		_, serr, rerr = dualTransferTo(t, scfg, rcfg, files, store)
		return serr, rerr
	}
	a, b := link(t, 0, 1)
	serr, rerr, _ = transferTo(t, a, b, scfg, rcfg, files, store)
	return serr, rerr
}

// transferEitherInto is transferEither into directory dst.
func transferEitherInto(t *testing.T, dual bool, scfg, rcfg kermit.Config, files []kermit.OutgoingFile, dst string) (serr, rerr error) {
	t.Helper()
	store, err := filestore.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	return transferEither(t, dual, scfg, rcfg, files, store)
}

// dualTransferTo is dualTransfer into store.
func dualTransferTo(t *testing.T, scfg, rcfg kermit.Config, files []kermit.OutgoingFile, store kermit.Store) (kermit.Stats, error, error) {
	t.Helper()
	send, recv := dualSessions(t, scfg, rcfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, store) }()
	serr := send.Send(ctx, files)
	if send.DataPath() == nil {
		t.Fatal("dual channel not negotiated")
	}
	return send.Stats(), serr, <-rerr
}

func TestDualRefusedFileIsDiscarded(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"ok1.bin", randomBytes(700_000, 1)}, {"ok2.bin", randomBytes(1000, 2)}})
	bad := out[0]
	bad.Name = "../escape.bin" // the receiver refuses it; its blocks must not linger
	files := []kermit.OutgoingFile{bad, out[0], out[1]}
	_, serr, rerr := dualTransfer(t, kermit.DefaultConfig(), kermit.DefaultConfig(), files, dst)
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 1 || ge.Failed[0] != "../escape.bin" || rerr != nil {
		t.Fatalf("send %v (want a group error naming only ../escape.bin), receive %v", serr, rerr)
	}
	checkFiles(t, dst, []testFile{{"ok1.bin", randomBytes(700_000, 1)}, {"ok2.bin", randomBytes(1000, 2)}})
	if _, err := os.Stat(filepath.Join(filepath.Dir(dst), "escape.bin")); err == nil {
		t.Error("refused file written outside the destination")
	}
}

func TestDualResume(t *testing.T) {
	data := randomBytes(3<<20, 4)
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"big.bin", data}})
	os.WriteFile(filepath.Join(dst, ".big.bin"+filestore.PartSuffix), data[:1<<20], 0o600)
	scfg := kermit.DefaultConfig()
	scfg.Resume = true
	st, serr, rerr := dualTransfer(t, scfg, kermit.DefaultConfig(), out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send %v, receive %v", serr, rerr)
	}
	checkFiles(t, dst, []testFile{{"big.bin", data}})
	if st.FileBytes != 2<<20 {
		t.Errorf("sent %d bytes, want only the missing %d", st.FileBytes, 2<<20)
	}

	// A partial that is not a prefix of the file is discarded and the
	// whole file sent again.
	bogus := append([]byte(nil), data[:1<<20]...)
	bogus[12345] ^= 1
	os.Remove(filepath.Join(dst, "big.bin"))
	os.WriteFile(filepath.Join(dst, ".big.bin"+filestore.PartSuffix), bogus, 0o600)
	_, serr, rerr = dualTransfer(t, scfg, kermit.DefaultConfig(), out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send %v, receive %v", serr, rerr)
	}
	checkFiles(t, dst, []testFile{{"big.bin", data}})
}

// flipConn flips one bit of the byte at offset at of what is read.
type flipConn struct {
	net.Conn
	at, pos int
}

func (c *flipConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if i := c.at - c.pos; i >= 0 && i < n {
		p[i] ^= 0x01
	}
	c.pos += n
	return n, err
}

// damagedHeader flips a bit in the first block header read from c.
func damagedHeader(c net.Conn) net.Conn { return &flipConn{Conn: c, at: 14} }

// A receiver whose data path fails for a cause it found (a damaged block
// header: the stream cannot be followed) says so at once, in an E: the
// sender, which only sees its data connection close, reports the
// receiver's cause, and so does the receiver.
func TestDataFailureCauseReachesBothSides(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"f.bin", randomBytes(20<<20, 3)}}) // still being sent when the receiver fails
	send, recv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), damagedHeader)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, _ := filestore.Open(dst)
	defer store.Close()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, store) }()
	serr := send.Send(ctx, out)
	for side, err := range map[string]error{"sender": serr, "receiver": <-rerr} {
		if err == nil || !strings.Contains(err.Error(), "header check") {
			t.Errorf("%s: %v; want the damaged header named", side, err)
		}
	}
}

// A server whose data path failed (a damaged header) tells the client
// why, once, and ends the session: no file can go over that path any
// more. (It answered every later read with the same failure, an E each
// time, as fast as it could write them.)
func TestServerEndsOnDataPathFailure(t *testing.T) {
	src, root := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"f.bin", randomBytes(20<<20, 5)}})
	cli, srv := dualSessions(t, kermit.DefaultConfig(), kermit.DefaultConfig(), damagedHeader)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fsys, _ := filestore.Open(root)
	defer fsys.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, fsys) }()
	if err := cli.Send(ctx, out); err == nil || !strings.Contains(err.Error(), "header check") {
		t.Errorf("client: %v; want the damaged header named", err)
	}
	select {
	case err := <-done:
		var de *kermit.DataPathError
		if !errors.As(err, &de) {
			t.Errorf("Serve: %v; want a DataPathError", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server kept serving over a failed data path")
	}
}

// stallConn stops reading once it has read after bytes, until closed,
// as a peer does that hangs, or whose path silently drops it; stalled is
// closed then.
type stallConn struct {
	net.Conn
	after     int
	read      int
	stalled   chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *stallConn) Read(p []byte) (int, error) {
	if c.read >= c.after {
		close(c.stalled)
		<-c.closed
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p[:min(len(p), c.after-c.read)])
	c.read += n
	return n, err
}

// A sender blocked writing to data connections nobody reads any more
// ends when the control link ends, instead of waiting on the data path
// (for ever here; a QUIC stream's idle timeout in life).
func TestDualSendEndsWhenControlLinkEnds(t *testing.T) {
	a, b := link(t, 0, 1)
	da, db := dualPair(t)
	stall := &stallConn{Conn: db.conn, after: 2 << 20, stalled: make(chan struct{}), closed: make(chan struct{})}
	db.conn = stall
	scfg, rcfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Dual, rcfg.Dual = da, db
	scfg.Streaming, rcfg.Streaming = true, true
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	defer send.Close()
	defer recv.Close()
	src, dst := t.TempDir(), t.TempDir()
	files := writeFiles(t, src, []testFile{{"big.bin", randomBytes(48<<20, 5)}})
	store, _ := filestore.Open(dst)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdone := make(chan struct{})
	go func() { recv.Receive(ctx, store); close(rdone) }()
	defer func() { <-rdone }() // before the store closes
	go func() {
		<-stall.stalled
		time.Sleep(100 * time.Millisecond) // the sender fills the socket buffers
		b.Close()                          // the receiver's control link, not its data connection
	}()
	err := send.Send(ctx, files)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("send: %v (context: %v), want an error once the control link ended", err, ctx.Err())
	}
	var le *kermit.LinkError
	if !errors.As(err, &le) {
		t.Fatalf("send: %v, want it to name the link's end", err)
	}
}

// A text-mode file (type AMJ) offered on a session with the data channel
// is refused for its type, with a reason, the session going on: its
// bytes cannot be converted on the data channel, and stored as sent they
// would differ from the same file sent in D packets (QA am F4).
func TestDualRefusesTextMode(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"lines.txt", []byte("line1\nline2\n")}})
	scfg := kermit.DefaultConfig()
	scfg.Text = true // as a third party that sends AMJ
	var refused error
	rcfg := kermit.DefaultConfig()
	rcfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileFailed {
			refused = e.Err
		}
	}
	_, serr, rerr := dualTransfer(t, scfg, rcfg, out, dst)
	var ge *kermit.GroupError
	if !errors.As(serr, &ge) || len(ge.Failed) != 1 || rerr != nil {
		t.Fatalf("send %v (want lines.txt not transferred), receive %v", serr, rerr)
	}
	if refused == nil || !strings.Contains(refused.Error(), "D packets") {
		t.Errorf("the receiver's reason: %v", refused)
	}
	if _, err := os.Stat(filepath.Join(dst, "lines.txt")); !os.IsNotExist(err) {
		t.Errorf("lines.txt stored: %v", err)
	}
}

// miscountingDual is a pipeDual whose path sends every file's blocks
// under id 0, as a peer that counts its file ids otherwise.
type miscountingDual struct{ *pipeDual }

func (d miscountingDual) Open(ctx context.Context, s string) (kermit.DataPath, error) {
	p, err := d.pipeDual.Open(ctx, s)
	return miscountingPath{p}, err
}

type miscountingPath struct{ kermit.DataPath }

func (p miscountingPath) SendFile(ctx context.Context, _ uint32, src io.ReaderAt, off, n int64) (uint32, error) {
	return p.DataPath.SendFile(ctx, 0, src, off, n)
}

// Blocks under a file id the receiver never expects (a peer that counts
// ids otherwise: QA am, a third-party client) end the transfer with a
// protocol error that says so, not a silent wait for blocks that never
// come.
func TestDualMiscountedIDsSaySo(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"a.bin", randomBytes(50_000, 3)}})
	a, b := link(t, 0, 1)
	da, db := dualPair(t)
	scfg := kermit.DefaultConfig()
	scfg.Streaming = true
	// (kermit's ErrProtocol when the blocks were parked before the file
	// was expected, the data path's when they came after.)
	if err := receiveWhileSent(t, a, b, miscountingDual{da}, db, scfg, out, dst); err == nil || !strings.Contains(err.Error(), "protocol error") || !strings.Contains(err.Error(), "file id 0") {
		t.Errorf("receiver: %v; want a protocol error naming the stray file id", err)
	}
}

// receiveWhileSent has a session on b with data path db receive into dst
// what a session on a with da and scfg sends of out, and returns the
// receiver's error.
func receiveWhileSent(t *testing.T, a, b net.Conn, da, db kermit.Dual, scfg kermit.Config, out []kermit.OutgoingFile, dst string) error {
	t.Helper()
	rcfg := kermit.DefaultConfig()
	rcfg.Streaming = scfg.Streaming
	scfg.Dual, rcfg.Dual = da, db
	send, recv := kermit.NewSession(a, scfg), kermit.NewSession(b, rcfg)
	defer send.Close()
	defer recv.Close()
	store, _ := filestore.Open(dst)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, store) }()
	send.Send(ctx, out)
	return <-rerr
}
