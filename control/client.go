package control

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"kerf/datachan"
	"kerf/kermit"
)

// ClientConfig configures a connection to a kerf (or any Kermit) server.
type ClientConfig struct {
	Addr     string // host:port of the control connection
	Streams  int    // data connections to ask for (default 1)
	Classic  bool   // do not offer the dual-channel extension
	Kermit   *kermit.Config
	PathOpts []datachan.Option
	Log      *slog.Logger
}

// Client is one control connection to a server.
type Client struct {
	conn net.Conn
	sess *kermit.Session
	dual *clientDual
}

// Dial connects to a server.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	addr := cfg.Addr
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(DefaultPort))
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	tuneControl(c)
	kc := kermit.DefaultConfig()
	if cfg.Kermit != nil {
		kc = *cfg.Kermit
	}
	kc.Streaming = true
	kc.Unprefix = kermit.UnprefixMinimal
	if cfg.Log != nil {
		kc.Log = cfg.Log
	}
	cl := &Client{conn: c}
	if !cfg.Classic {
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		cl.dual = &clientDual{host: host, streams: max(1, cfg.Streams), pathOpts: cfg.PathOpts}
		kc.Dual = cl.dual
	}
	cl.sess = kermit.NewSession(c, kc)
	return cl, nil
}

// Session is the Kermit session on the control connection.
func (c *Client) Session() *kermit.Session { return c.sess }

// Dual reports whether file data goes over data connections.
func (c *Client) Dual() bool { return c.sess.DataPath() != nil }

// Send sends files to the server's current directory.
func (c *Client) Send(ctx context.Context, files []kermit.OutgoingFile) error {
	return c.sess.Send(ctx, files)
}

// Get fetches the files matching spec into store.
func (c *Client) Get(ctx context.Context, spec string, recursive bool, store kermit.Store) error {
	return c.sess.Get(ctx, spec, recursive, store)
}

// Generic runs a REMOTE command (see kermit.Session.Generic).
func (c *Client) Generic(ctx context.Context, cmd byte, args ...string) (string, error) {
	return c.sess.Generic(ctx, cmd, args...)
}

// Close ends the session (BYE) and closes the connections.
func (c *Client) Close() error {
	c.sess.Close()
	if c.dual != nil && c.dual.path != nil {
		c.dual.path.Close()
	}
	return c.conn.Close()
}
