package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"kerf/datachan"
	"kerf/filestore"
	"kerf/kermit"
)

// ServerConfig configures a kerf server.
type ServerConfig struct {
	Root       string // directory served
	Addr       string // control listen address (default ":1649")
	DataAddr   string // data listen address (default: control host, any port)
	MaxStreams int    // data connections a client may open (default 8)
	// IdleTimeout drops a session that says nothing for this long.
	IdleTimeout time.Duration
	// Kermit holds the protocol preferences; zero means DefaultConfig.
	Kermit   *kermit.Config
	PathOpts []datachan.Option
	Log      *slog.Logger
}

// Server accepts control connections and serves each as a Kermit server.
type Server struct {
	cfg ServerConfig
	ln  net.Listener
	dl  *datachan.Listener
	wg  sync.WaitGroup
}

// NewServer opens the control and data listeners.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = fmt.Sprintf(":%d", DefaultPort)
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 8
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	daddr := cfg.DataAddr
	if daddr == "" {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		daddr = net.JoinHostPort(host, "0")
	}
	dl, err := datachan.Listen(daddr, nil)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	return &Server{cfg: cfg, ln: ln, dl: dl}, nil
}

// Addr is the control listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// DataAddr is the data listener's address.
func (s *Server) DataAddr() net.Addr { return s.dl.Addr() }

// DataListener exposes the data listener (for its refusal counter).
func (s *Server) DataListener() *datachan.Listener { return s.dl }

// Serve accepts sessions until ctx ends or Close is called.
func (s *Server) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.ln.Close()
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.wg.Wait()
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("control: accept: %w", err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, c)
		}()
	}
}

// Close stops accepting; running sessions end when their peers leave.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.dl.Close()
	return err
}

func (s *Server) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	log := s.cfg.Log.With("peer", c.RemoteAddr().String())
	log.Info("session start")
	tuneControl(c)
	fsys, err := filestore.Open(s.cfg.Root)
	if err != nil {
		log.Error("session", "err", err)
		return
	}
	defer fsys.Close()
	kc := kermit.DefaultConfig()
	if s.cfg.Kermit != nil {
		kc = *s.cfg.Kermit
	}
	kc.Streaming = true // TCP is reliable
	kc.IdleTimeout = s.cfg.IdleTimeout
	kc.Unprefix = kermit.UnprefixMinimal
	kc.Log = log
	ip := c.RemoteAddr().(*net.TCPAddr).IP
	dual := &serverDual{dl: s.dl, remote: ip, maxStreams: s.cfg.MaxStreams, ttl: 30 * time.Second, pathOpts: s.cfg.PathOpts}
	defer dual.close()
	kc.Dual = dual
	sess := kermit.NewSession(c, kc)
	defer sess.Close()
	err = sess.Serve(ctx, fsys)
	log.Info("session end", "err", err, "dual", sess.DataPath() != nil)
}

// tuneControl turns off Nagle: Kermit's short ACKs must not wait for
// delayed ACKs (the classic Kermit-over-TCP stall).
func tuneControl(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}
