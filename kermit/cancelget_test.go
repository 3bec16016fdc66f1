package kermit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// A GET whose client canceled the rest of its group (Z in a D's ACK)
// ends with the group's B; the server sends no E after it, which the
// client would read as the answer to its next command (QA am F8: a
// REMOTE PWD after it failed with "transfer canceled").
func TestCanceledGetLeavesNoStaleError(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	writeFiles(t, root, []testFile{{"big.bin", randomBytes(2<<20, 5)}, {"next.bin", randomBytes(1000, 6)}})
	a, b := link(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fsys, _ := filestore.Open(root)
	defer fsys.Close()
	tap := &tapConn{Conn: b}
	srv := kermit.NewSession(tap, kermit.DefaultConfig())
	go srv.Serve(ctx, fsys)
	ccfg := kermit.DefaultConfig()
	var cli *kermit.Session
	var once sync.Once
	ccfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileProgress {
			once.Do(func() { cli.CancelGroup() })
		}
	}
	ctap := &tapConn{Conn: a}
	cli = kermit.NewSession(ctap, ccfg)
	store, _ := filestore.Open(dst)
	defer store.Close()
	if err := cli.Get(ctx, "big.bin next.bin", false, store); !errors.Is(err, kermit.ErrCanceled) {
		t.Fatalf("canceled get: %v, want canceled", err)
	}
	if pwd, err := cli.Generic(ctx, 'A'); err != nil || pwd != "/" {
		t.Errorf("remote pwd after the canceled get: %q, %v", pwd, err)
	}
	tap.mu.Lock()
	types, _ := scanPackets(tap.out, framing.CheckType(3))
	tap.mu.Unlock()
	if !strings.Contains(types, "B") || strings.Contains(types[strings.LastIndex(types, "B"):], "E") {
		t.Errorf("the server sent %q (type-3 checks): an E after the group's B", types)
	}
	// Nor the client: its group ended with its ACK of the B (review 56).
	ctap.mu.Lock()
	types, _ = scanPackets(ctap.out, framing.CheckType(3))
	ctap.mu.Unlock()
	if strings.Contains(types, "E") {
		t.Errorf("the client sent %q (type-3 checks): an E after the group it canceled", types)
	}
}

// A sender whose receiver canceled the rest of its group ends with the
// B exchange too, and sends no E after it (review 56).
func TestCanceledSendLeavesNoStaleError(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, []testFile{{"big.bin", randomBytes(2<<20, 5)}, {"next.bin", randomBytes(1000, 6)}})
	a, b := link(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rcfg := kermit.DefaultConfig()
	var recv *kermit.Session
	var once sync.Once
	rcfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileProgress {
			once.Do(func() { recv.CancelGroup() })
		}
	}
	recv = kermit.NewSession(b, rcfg)
	store, _ := filestore.Open(dst)
	defer store.Close()
	rerr := make(chan error, 1)
	go func() { rerr <- recv.Receive(ctx, store) }()
	tap := &tapConn{Conn: a}
	send := kermit.NewSession(tap, kermit.DefaultConfig())
	if err := send.Send(ctx, out); !errors.Is(err, kermit.ErrCanceled) {
		t.Errorf("send: %v, want canceled", err)
	}
	if err := <-rerr; !errors.Is(err, kermit.ErrCanceled) {
		t.Errorf("receive: %v, want canceled", err)
	}
	tap.mu.Lock()
	types, _ := scanPackets(tap.out, framing.CheckType(3))
	tap.mu.Unlock()
	if !strings.Contains(types, "B") || strings.Contains(types[strings.LastIndex(types, "B"):], "E") {
		t.Errorf("the sender sent %q (type-3 checks): an E after the group's B", types)
	}
}
