package kermit_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/kermit"
)

// scriptConn plays back fixed bytes as the peer and swallows our output.
type scriptConn struct{ r io.Reader }

func (c scriptConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c scriptConn) Write(b []byte) (int, error) { return len(b), nil }

// SetParity lets the session follow parity it detects (as on a serial
// link); the script's bytes are what they are.
func (c scriptConn) SetParity(string) error { return nil }

func packets(pk ...framing.Packet) []byte {
	var out []byte
	for _, p := range pk {
		chk := framing.CheckType(1)
		if p.Type != 'S' && p.Type != 'I' && p.Type != 'R' && p.Type != 'G' && p.Type != 'Y' {
			chk = 3
		}
		out, _ = framing.Frame{Check: chk}.AppendPacket(out, p)
		out = append(out, '\r')
	}
	return out
}

// FuzzServe drives a whole server session from arbitrary client bytes: it
// must never panic, hang, or touch anything outside its root.
func FuzzServe(f *testing.F) {
	cfg := kermit.DefaultConfig()
	init := framing.Params{MaxLen: 94, Timeout: 5, EOL: '\r', QCTL: '#', QBIN: 'Y', Check: 3, REPT: '~',
		Capas: framing.CapLong | framing.CapWindows | framing.CapAttrs, Window: 31, MaxLenX: 9024,
		WhatAmI: framing.WhatValid | framing.WhatBinary}
	a := framing.NewAttributes()
	a.Length = 5
	attrs := a.Marshal(90)
	f.Add(packets(framing.Packet{Seq: 0, Type: 'S', Data: init.Marshal()},
		framing.Packet{Seq: 1, Type: 'F', Data: []byte("x.txt")},
		framing.Packet{Seq: 2, Type: 'A', Data: attrs[0]},
		framing.Packet{Seq: 3, Type: 'D', Data: []byte("hello")},
		framing.Packet{Seq: 4, Type: 'Z'},
		framing.Packet{Seq: 5, Type: 'B'}))
	f.Add(packets(framing.Packet{Seq: 0, Type: 'S', Data: init.Marshal()},
		framing.Packet{Seq: 1, Type: 'F', Data: []byte("../../escape")}))
	f.Add(packets(framing.Packet{Seq: 0, Type: 'I', Data: init.Marshal()},
		framing.Packet{Seq: 0, Type: 'R', Data: []byte("*")}))
	f.Add(packets(framing.Packet{Seq: 0, Type: 'G', Data: []byte("D")},
		framing.Packet{Seq: 0, Type: 'G', Data: []byte("C#\"..")},
		framing.Packet{Seq: 0, Type: 'G', Data: []byte("E$/etc")}))
	f.Add([]byte("kermit -ir\r\x01\x7f\x80 garbage"))
	// A client on a 7-bit line with parity (the session detects it).
	for _, kind := range []string{"even", "odd", "mark"} {
		f.Add(kermit.AddParity(packets(framing.Packet{Seq: 0, Type: 'S', Data: init.Marshal()},
			framing.Packet{Seq: 1, Type: 'F', Data: []byte("p.txt")},
			framing.Packet{Seq: 2, Type: 'D', Data: []byte("7-bit")},
			framing.Packet{Seq: 3, Type: 'Z'},
			framing.Packet{Seq: 4, Type: 'B'}), kind))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		os.MkdirAll(root, 0o755)
		os.WriteFile(filepath.Join(root, "a.txt"), []byte("served"), 0o644)
		fsys, err := filestore.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer fsys.Close()
		c := cfg
		c.Timeout, c.MinTimeout, c.MaxRetries, c.IdleTimeout = 20*time.Millisecond, 10*time.Millisecond, 2, 100*time.Millisecond
		c.DetectParity = true
		s := kermit.NewSession(scriptConn{bytes.NewReader(in)}, c)
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Serve(ctx, fsys)
		if ctx.Err() != nil {
			t.Fatalf("session did not end on EOF of its input")
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) != 1 {
			t.Fatalf("something was written beside the root: %v", ents)
		}
	})
}
