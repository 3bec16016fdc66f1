package kermit_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// brokenFlushPath is a data path whose Flush always fails, as a path
// whose batch outlived its failure did: the server flushes before it
// reads each command.
type brokenFlushPath struct{ stallingPath }

func (p *brokenFlushPath) Flush() error { return errors.New("data connection lost") }
func (p *brokenFlushPath) Open(context.Context, string) (kermit.DataPath, error) {
	return p, nil
}

// A server that cannot read a command without failing ends the session
// after a few such failures, instead of failing, logging and trying
// again as fast as it can (QA: 80,000 log lines a second until the
// client went).
func TestServerFailingBeforeEachCommandEnds(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var logs syncBuf
	sp := &brokenFlushPath{stallingPath{closed: make(chan struct{})}}
	cp := &stallingPath{closed: make(chan struct{}), cut: func() {}}
	scfg, ccfg := kermit.DefaultConfig(), kermit.DefaultConfig()
	scfg.Dual, ccfg.Dual = sp, cp
	scfg.Streaming, ccfg.Streaming = true, true
	scfg.Reliable, ccfg.Reliable = true, true
	scfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	srv, cl := kermit.NewSession(a, scfg), kermit.NewSession(b, ccfg)
	defer srv.Close()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, store) }()
	files := writeFiles(t, t.TempDir(), []testFile{{"f.bin", []byte("data")}})
	go cl.Send(ctx, files) // fails: the server's path is broken
	select {
	case err := <-done:
		if err == nil {
			t.Error("Serve ended without an error")
		}
	case <-ctx.Done():
		t.Fatal("the server went on failing before every command")
	}
	if n := strings.Count(logs.String(), "server command failed"); n > 4 {
		t.Errorf("%d failures logged before the session ended", n)
	}
}
