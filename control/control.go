// Package control is kerf's dual-channel service: a Kermit session on
// the control connection (the kermit engine, unchanged) plus the data
// connections that carry file bytes. It offers the dual-channel
// extension in the Send-Init exchange; a peer that does not answer it
// (C-Kermit, G-Kermit) gets classic single-channel Kermit, streaming, on
// the same connection.
package control

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"kerf/datachan"
	"kerf/kermit"
)

// DefaultPort is the IANA port for Kermit.
const DefaultPort = 1649

// Extension field keys (the text after WHATAMI2 in the Send-Init, see
// docs/protocol.md): "N<streams>" from the client; "P<port>;N<streams>;
// T<token>" from the server.
func parseExt(ext string) map[byte]string {
	m := map[byte]string{}
	for _, f := range strings.Split(ext, ";") {
		if len(f) >= 1 {
			m[f[0]] = f[1:]
		}
	}
	return m
}

func encodeToken(t datachan.Token) string { return base64.RawURLEncoding.EncodeToString(t[:]) }

func decodeToken(s string) (datachan.Token, error) {
	var t datachan.Token
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(t) {
		return t, fmt.Errorf("control: bad data-channel token in the server's Send-Init")
	}
	copy(t[:], b)
	return t, nil
}

// serverDual answers a client's dual-channel offer with a fresh token.
type serverDual struct {
	dl         *datachan.Listener
	remote     net.IP
	maxStreams int
	ttl        time.Duration
	pending    *datachan.Pending
	pathOpts   []datachan.Option
	path       *datachan.Path
}

func (d *serverDual) Offer(peerExt string) string {
	n, _ := strconv.Atoi(parseExt(peerExt)['N'])
	n = max(1, min(n, d.maxStreams))
	tok := datachan.NewToken()
	if d.pending != nil {
		d.pending.Cancel()
	}
	d.pending = d.dl.Expect(tok, d.remote, n, d.ttl)
	port := d.dl.Addr().(*net.TCPAddr).Port
	return fmt.Sprintf("P%d;N%d;T%s", port, n, encodeToken(tok))
}

func (d *serverDual) Open(ctx context.Context, peerExt string) (kermit.DataPath, error) {
	if d.pending == nil {
		return nil, fmt.Errorf("control: no data channel was offered")
	}
	ctx, cancel := context.WithTimeout(ctx, d.ttl)
	defer cancel()
	conns, err := d.pending.Wait(ctx)
	d.pending = nil
	if err != nil {
		return nil, err
	}
	d.path = datachan.NewPath(conns, d.pathOpts...)
	return d.path, nil
}

func (d *serverDual) close() {
	if d.pending != nil {
		d.pending.Cancel()
	}
	if d.path != nil {
		d.path.Close()
	}
}

// clientDual offers the extension and dials the data connections.
type clientDual struct {
	host     string
	streams  int
	pathOpts []datachan.Option
	path     *datachan.Path
}

func (d *clientDual) Offer(string) string { return "N" + strconv.Itoa(d.streams) }

func (d *clientDual) Open(ctx context.Context, peerExt string) (kermit.DataPath, error) {
	f := parseExt(peerExt)
	port, err := strconv.Atoi(f['P'])
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("control: bad data port %q in the server's Send-Init", f['P'])
	}
	n, err := strconv.Atoi(f['N'])
	if err != nil || n < 1 || n > 64 {
		return nil, fmt.Errorf("control: bad stream count %q in the server's Send-Init", f['N'])
	}
	tok, err := decodeToken(f['T'])
	if err != nil {
		return nil, err
	}
	conns, err := datachan.Dial(ctx, net.JoinHostPort(d.host, strconv.Itoa(port)), tok, n, nil)
	if err != nil {
		return nil, err
	}
	d.path = datachan.NewPath(conns, d.pathOpts...)
	return d.path, nil
}
