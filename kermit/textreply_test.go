package kermit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// A server's text reply (a REMOTE command's words, a listing) comes
// in-band: no data connection is opened for it, which would cost a
// listing a TCP connect, a TLS handshake and a pairing on a long path.
// The files of the next transfer open them, and text after that goes
// as before.
func TestTextRepliesOpenNoDataChannel(t *testing.T) {
	root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	there := []testFile{{"a.txt", []byte(strings.Repeat("a", 100))}, {"b.txt", []byte("b")}, {"sub/c.txt", []byte("c")}}
	writeFiles(t, root, there)
	cli, ctx := servedClient(t, root)

	list, err := cli.Generic(ctx, 'D', "")
	if err != nil || !strings.Contains(list, "a.txt") || !strings.Contains(list, "b.txt") {
		t.Fatalf("REMOTE DIRECTORY: %q, %v", list, err)
	}
	if cli.DataPath() != nil {
		t.Fatal("a REMOTE DIRECTORY opened the data channel")
	}
	tree, err := cli.ListTree(ctx, "sub")
	if err != nil || len(tree) == 0 {
		t.Fatalf("ListTree: %v, %v", tree, err)
	}
	if _, err := cli.Generic(ctx, 'C', "sub"); err != nil {
		t.Fatalf("REMOTE CD: %v", err)
	}
	if cli.DataPath() != nil {
		t.Fatal("a listing or a REMOTE CD opened the data channel")
	}
	if _, err := cli.Generic(ctx, 'C', ".."); err != nil {
		t.Fatalf("REMOTE CD ..: %v", err)
	}

	// The files of a GET open it.
	store, err := filestore.Open(back)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := cli.Get(ctx, "a.txt", false, store); err != nil {
		t.Fatalf("GET: %v", err)
	}
	if cli.DataPath() == nil {
		t.Fatal("a GET did not open the data channel")
	}
	checkFiles(t, back, there[:1])

	// Text after it, on a session whose data channel is open, still comes.
	if list, err := cli.Generic(ctx, 'D', ""); err != nil || !strings.Contains(list, "b.txt") {
		t.Fatalf("REMOTE DIRECTORY after a GET: %q, %v", list, err)
	}
	// And so do the files of a send.
	up := []testFile{{"up.bin", randomBytes(50_000, 3)}}
	if err := cli.Send(ctx, writeFiles(t, src, up)); err != nil {
		t.Fatalf("send: %v", err)
	}
	checkFiles(t, root, up)
}

// GenericWithDefaults sends its command with no I exchange before it
// (one round trip fewer: a client's login), and the server answers it
// under the protocol's defaults; Generic still sends the I first.
func TestGenericWithDefaultsSendsNoI(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, []testFile{{"x.txt", []byte("x")}})
	cli, tap, ctx := tappedClient(t, root, kermit.DefaultConfig())

	if _, err := cli.GenericWithDefaults(ctx, 'C', "."); err != nil {
		t.Fatalf("REMOTE CD with defaults: %v", err)
	}
	if got := types(tap.packets()); got != "G" {
		t.Fatalf("the client sent %q, want a G alone", got)
	}
	// A reply longer than an ACK comes as a group, under the defaults.
	list, err := cli.GenericWithDefaults(ctx, 'D', "")
	if err != nil || !strings.Contains(list, "x.txt") {
		t.Fatalf("REMOTE DIRECTORY with defaults: %q, %v", list, err)
	}
	if got := types(tap.packets()); !strings.HasPrefix(got, "GG") || strings.Contains(got, "I") {
		t.Fatalf("the client sent %q, want no I", got)
	}
	if _, err := cli.Generic(ctx, 'C', "."); err != nil {
		t.Fatalf("REMOTE CD: %v", err)
	}
	if got := types(tap.packets()); !strings.HasSuffix(got, "IG") {
		t.Fatalf("Generic sent %q, want an I before its G", got)
	}

	// A command too long for the defaults' short packet is not sent.
	sent := len(tap.packets())
	if _, err := cli.GenericWithDefaults(ctx, 'C', strings.Repeat("d", 120)); !errors.Is(err, kermit.ErrFieldTooLong) {
		t.Fatalf("a 120-byte REMOTE CD with defaults: %v, want ErrFieldTooLong", err)
	}
	if n := len(tap.packets()); n != sent {
		t.Fatalf("%d packets sent for a command that did not fit", n-sent)
	}
	// An answer longer than an ACK under the defaults (the new directory,
	// 123 bytes) comes whole, as a text group.
	outer, inner := strings.Repeat("a", 60), strings.Repeat("b", 60)
	if err := os.MkdirAll(filepath.Join(root, outer, inner), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.GenericWithDefaults(ctx, 'C', outer); err != nil {
		t.Fatalf("REMOTE CD %s: %v", outer, err)
	}
	reply, err := cli.GenericWithDefaults(ctx, 'C', inner)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(reply), outer+"/"+inner) {
		t.Fatalf("REMOTE CD %s: %q, %v; want the whole new directory", inner, reply, err)
	}
}

// tappedClient is a client session, configured as ccfg, of a server
// session serving root over a loopback link (classic: no data path),
// with what the client writes tapped; all closed when t ends.
func tappedClient(t *testing.T, root string, ccfg kermit.Config) (*kermit.Session, *tappedConn, context.Context) {
	t.Helper()
	dir, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	a, b := link(t, 0, 1)
	tap := &tappedConn{Conn: a}
	cli, srv := kermit.NewSession(tap, ccfg), kermit.NewSession(b, kermit.DefaultConfig())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() { cancel(); cli.Close(); srv.Close(); dir.Close() })
	go srv.Serve(ctx, dir)
	return cli, tap, ctx
}

func types(ps []wirePacket) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteByte(p.typ)
	}
	return b.String()
}

// With ShortWithoutI (a client of a kerf server over TLS), Generic
// sends REMOTE CD, MKDIR and SET with no I before them where they fit
// a short packet, and other commands, and longer ones, with it.
func TestShortWithoutI(t *testing.T) {
	root := t.TempDir()
	ccfg := kermit.DefaultConfig()
	ccfg.ShortWithoutI = true
	cli, tap, ctx := tappedClient(t, root, ccfg)

	long := strings.Repeat("L", 120)
	steps := []struct {
		cmd  byte
		args []string
		want string // packet types the client sends for it
	}{
		{'m', []string{"made"}, "G"},
		{'C', []string{"made"}, "G"},
		{'m', []string{long}, "IG"},
		{'C', []string{long}, "IG"},
		{'D', []string{""}, "IG"},
	}
	for _, st := range steps {
		before := len(tap.packets())
		if _, err := cli.Generic(ctx, st.cmd, st.args...); err != nil {
			t.Fatalf("%c %.10s: %v", st.cmd, st.args[0], err)
		}
		got := types(tap.packets()[before:])
		if !strings.HasPrefix(got, st.want) || st.want == "G" && strings.Contains(got, "I") {
			t.Errorf("%c %.10s sent %q, want %q first", st.cmd, st.args[0], got, st.want)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "made", long)); err != nil || !fi.IsDir() {
		t.Errorf("made/%.10s...: %v", long, err)
	}
	// REMOTE SET of a parameter the server does not know is refused
	// under the defaults as it is after an I.
	before := len(tap.packets())
	if _, err := cli.Generic(ctx, 'S', "no-such-parameter", "on"); err == nil {
		t.Error("REMOTE SET of an unknown parameter accepted")
	}
	if got := types(tap.packets()[before:]); !strings.HasPrefix(got, "G") {
		t.Errorf("REMOTE SET sent %q, want a G first", got)
	}
}

// A kerf server's E to a command sent without an I reaches the kerf
// client exact: an E goes plain only to a peer known classic (the
// review: "no#Such#dir" came back as "no^Suchdir").
func TestErrorTextExactWithoutI(t *testing.T) {
	ccfg := kermit.DefaultConfig()
	ccfg.ShortWithoutI = true
	cli, _, ctx := tappedClient(t, t.TempDir(), ccfg)
	_, err := cli.Generic(ctx, 'C', "no#Such#dir~~~~")
	if err == nil || !strings.Contains(err.Error(), "no#Such#dir~~~~") {
		t.Errorf("REMOTE CD of a missing directory: %v; want its name exact", err)
	}
}
