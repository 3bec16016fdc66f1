package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/auth"
	"kerf/kermit"
)

// hostileFS answers every GET with the names it is given, whatever was
// asked for, each file's data announced as one length and sent longer
// by extra copies.
type hostileFS struct {
	kermit.ServerFS // nil: what a GET does not use
	names           []string
	extra           int
}

type nopReadCloser struct{ *bytes.Reader }

func (nopReadCloser) Close() error { return nil }

func (h *hostileFS) Login(string, string) error { return nil }
func (h *hostileFS) Authorized(string) error    { return nil }
func (h *hostileFS) Pwd() string                { return "/" }
func (h *hostileFS) Chdir(string) error         { return nil }
func (h *hostileFS) Match(string, bool) ([]kermit.OutgoingFile, error) {
	var out []kermit.OutgoingFile
	for _, n := range h.names {
		if strings.HasSuffix(n, "/") {
			out = append(out, kermit.OutgoingFile{Name: strings.TrimSuffix(n, "/"), Dir: true, ModTime: time.Now(), Mode: 0o777 | fs.ModeDir, ModeKnown: true})
			continue
		}
		data := []byte("from the server\n")
		body := bytes.Repeat(data, 1+h.extra)
		out = append(out, kermit.OutgoingFile{Name: n, Size: int64(len(data)), ModTime: time.Now(), Mode: 0o644, ModeKnown: true,
			Open: func() (kermit.FileReader, error) { return nopReadCloser{bytes.NewReader(body)}, nil }})
	}
	return out, nil
}

// startHostile serves fsys over TLS, as a kerf server's control
// connection does (no data connections: the data goes in D packets).
func startHostile(t *testing.T, fsys kermit.ServerFS) *server {
	t.Helper()
	id, _, err := auth.LoadOrCreateIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", id.ServerTLS())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				s := kermit.NewSession(c, kermit.DefaultConfig())
				defer s.Close()
				s.Serve(ctx, fsys)
			}(c)
		}
	}()
	return &server{addr: ln.Addr().String(), clientState: t.TempDir()}
}

// A server that sends names the get did not ask for has them refused,
// and nothing is stored under them (as scp since CVE-2019-6111): a get
// of one file into a directory does not write .bashrc there, a get -r
// of a tree writes nothing beside it.
func TestHostileServerNamesRefused(t *testing.T) {
	for _, c := range []struct {
		what  string
		names []string
		args  []string
		kept  []string // stored: what was asked for
		not   []string // never stored
	}{
		{"one file", []string{".bashrc", "report.pdf"}, []string{"report.pdf"}, []string{"report.pdf"}, []string{".bashrc"}},
		{"a wildcard", []string{".profile", "a.txt", "b.log"}, []string{"*.txt"}, []string{"a.txt"}, []string{".profile", "b.log"}},
		{"a star", []string{".profile", "a.txt"}, []string{"*"}, []string{"a.txt"}, []string{".profile"}},
		{"a tree", []string{"photos/", "photos/a.jpg", ".ssh/", ".ssh/authorized_keys", "other.txt"}, []string{"-r", "photos"}, []string{"photos/a.jpg"}, []string{".ssh", "other.txt"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			srv := startHostile(t, &hostileFS{names: c.names})
			local := t.TempDir()
			dest := filepath.Join(local, "home")
			writeFile(t, filepath.Join(dest, "keep.txt"), []byte("mine"))
			args := append([]string{}, c.args...)
			args[len(args)-1] = target(srv.addr, args[len(args)-1])
			r := run(t, srv, local, nil, "get", append(args, dest)...)
			if r.code != 4 || !strings.Contains(r.stderr, "not among the names asked for") {
				t.Errorf("want exit 4 naming the refused names, got %s", r)
			}
			for _, n := range c.kept {
				if b, err := os.ReadFile(filepath.Join(dest, n)); err != nil || string(b) != "from the server\n" {
					t.Errorf("%s: %q, %v; want it stored", n, b, err)
				}
			}
			for _, n := range c.not {
				if _, err := os.Lstat(filepath.Join(dest, n)); err == nil {
					t.Errorf("%s was stored", n)
				}
			}
		})
	}
}

// A server that sends more data than it announced fails the file (its
// engine finds it so before the client's length check does): no
// connection was lost, so none is dialled again (it was, for two
// minutes), and nothing is stored under the name.
//
// To standard output, what came past the length announced is not passed
// on (QA aq: 100,000 bytes for 10 announced were, before the exit 4).
func TestServerSendingMoreThanAnnounced(t *testing.T) {
	srv := startHostile(t, &hostileFS{names: []string{"big.txt"}, extra: 1000})
	local := t.TempDir()
	r := run(t, srv, local, nil, "get", target(srv.addr, "big.txt"), "-")
	if r.code != 4 || !strings.Contains(r.stderr, "16016 bytes") {
		t.Errorf("to standard output: want exit 4 saying more came than announced, got %s", r)
	}
	if len(r.stdout) > 16 {
		t.Errorf("%d bytes written to standard output, for 16 announced", len(r.stdout))
	}
	r = run(t, srv, local, nil, "get", target(srv.addr, "big.txt"), ".")
	if r.code != 4 || !strings.Contains(r.stderr, "16016 bytes") {
		t.Errorf("want exit 4 saying more came than announced, got %s", r)
	}
	if strings.Contains(r.stderr, "reconnecting") {
		t.Errorf("dialled again for a peer's protocol error:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(local, "big.txt")); err == nil {
		t.Error("big.txt was stored")
	}
}
