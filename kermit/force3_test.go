package kermit_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/internal/peertest"
	"kerf/kermit"
)

// rwPair joins a reader and a writer into a link.
type rwPair struct {
	io.Reader
	io.Writer
}

// countChecks counts the packets in wire that parse with check type 1
// and with type 3.
func countChecks(wire []byte) (n1, n3 int) {
	t1, _ := scanPackets(wire, 1)
	t3, _ := scanPackets(wire, 3)
	return len(t1), len(t3)
}

// A type-3 packet left on the line by an earlier transaction (whose
// data phase used type 3) is not taken for a FORCE-3 peer: the sender's
// Send-Init tries stay type 1 and type 3 in turn.
func TestForce3NotFooledByStaleType3(t *testing.T) {
	a, b := link(t, 0, 1)
	f := framing.Frame{Mark: framing.SOH, Check: 3}
	stale, _ := f.AppendPacket(nil, framing.Packet{Seq: 5, Type: 'Y'})
	b.Write(append(stale, '\r'))
	cfg := kermit.DefaultConfig()
	cfg.Timeout, cfg.MinTimeout, cfg.MaxRetries = 300*time.Millisecond, 300*time.Millisecond, 4
	s := kermit.NewSession(a, cfg)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go s.Send(ctx, nil)
	var got []byte
	buf := make([]byte, 4096)
	b.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
	for {
		n, err := b.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	n1, n3 := countChecks(got)
	if n1 < 2 || n3 < 1 {
		t.Fatalf("Send-Init tries: %d type 1, %d type 3; want both, type 1 first and again", n1, n3)
	}
}

// A FORCE-3 sender whose type-3 Send-Init also passes the type-1
// checksum (a window and timeout found for the CAPAS bytes kerf sends)
// is still recognised: the receiver
// takes the S as type 3 because it says "5", and the transfer keeps its
// attributes (file modes here), which a misread S would lose.
func TestForce3SendInitPassingType1Too(t *testing.T) {
	files := standardFiles()[:2]
	src, dst := t.TempDir(), t.TempDir()
	out := writeFiles(t, src, files)
	forced, plain := kermit.DefaultConfig(), kermit.DefaultConfig()
	forced.Check = kermit.CheckForce3
	// A (window, timeout) pair whose S passes the type-1 check too: the
	// bytes change with every new CAPAS bit, so the pair is searched for.
	found := false
	for w := 1; w <= 31 && !found; w++ {
		for to := 1; to <= 94 && !found; to++ {
			forced.Window, forced.Timeout = w, time.Duration(to)*time.Second
			wire := kermit.SendInitWire(forced)
			if n1, _ := countChecks(append(wire, '\r')); n1 == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("no window and timeout make a FORCE-3 S that passes the type-1 check")
	}
	a, b := link(t, 0, 1)
	ta := &tapConn{Conn: a}
	serr, rerr, _ := transfer(t, ta, b, forced, plain, out, dst)
	if serr != nil || rerr != nil {
		t.Fatalf("send: %v, receive: %v", serr, rerr)
	}
	// The premise: the first S passes both checks.
	if n1, n3 := countChecks(ta.out[:bytes.IndexByte(ta.out, '\r')+1]); n1 != 1 || n3 != 1 {
		t.Fatalf("the first S parses %d times as type 1, %d as type 3: the test lost its premise", n1, n3)
	}
	checkFiles(t, dst, files)
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(dst, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o640 {
			t.Fatalf("%s: mode %v, want 0640: the attributes were lost", f.name, fi.Mode())
		}
	}
}

// A kerf server that has served a FORCE-3 client serves a plain one
// (G-Kermit) next: each transaction looks for FORCE-3 afresh.
func TestForce3ServerThenPlainClient(t *testing.T) {
	gk := peertest.RequirePeer(t, "gkermit")
	srvDir, cliDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(srvDir, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sr, lw, _ := os.Pipe() // clients -> server
	lr, sw, _ := os.Pipe() // server -> relay -> the client of the moment
	defer sr.Close()
	defer sw.Close()
	// The relay hands the server's output to one client at a time, so
	// that the first client's reader, which outlives its session, takes
	// nothing meant for the second.
	var mu sync.Mutex
	var to io.Writer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := lr.Read(buf)
			mu.Lock()
			if to != nil {
				to.Write(buf[:n])
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	setClient := func(w io.Writer) { mu.Lock(); to = w; mu.Unlock() }
	scfg := kermit.DefaultConfig()
	scfg.Timeout = time.Second
	srv := kermit.NewSession(rwPair{sr, sw}, scfg)
	defer srv.Close()
	store, err := filestore.Open(srvDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx, store)

	ccfg := kermit.DefaultConfig()
	ccfg.Check, ccfg.Timeout = kermit.CheckForce3, time.Second
	cr, cw := io.Pipe()
	setClient(cw)
	c := kermit.NewSession(rwPair{cr, lw}, ccfg)
	cstore, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cstore.Close()
	if err := c.Get(ctx, "f.txt", false, cstore); err != nil {
		t.Fatalf("FORCE-3 client: %v", err)
	}
	c.Close()
	cw.Close()

	gr, gw, _ := os.Pipe()
	defer gr.Close()
	defer gw.Close()
	setClient(gw)
	cmd := exec.Command(gk, "-g", "f.txt")
	cmd.Dir = cliDir
	cmd.Stdin, cmd.Stdout = gr, lw
	var stderr bytes.Buffer // read only after Wait
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("gkermit -g after a FORCE-3 client: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("gkermit -g hangs after a FORCE-3 client:\n%s", stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(cliDir, "f.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("gkermit got %q, %v", b, err)
	}
}

// damageFirst damages the first n writes longer than a NAK (a byte of
// each flipped): the first Send-Inits, hit by line noise.
type damageFirst struct {
	net.Conn
	mu sync.Mutex
	n  int
}

func (c *damageFirst) Write(b []byte) (int, error) {
	c.mu.Lock()
	if c.n > 0 && len(b) > 6 {
		c.n--
		d := append([]byte(nil), b...)
		d[5] ^= 0x04
		c.mu.Unlock()
		if _, err := c.Conn.Write(d); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// A sender forcing type 3 whose first Send-Inits come damaged to a
// receiver not forcing it (which NAKs each in type 1, then reads a whole
// one's "5" and follows) goes on: a type-1 NAK or two is damage, not a
// peer without block check 5 (review 57: two ended the send).
func TestForce3SenderOutlastsDamagedInits(t *testing.T) {
	for _, n := range []int{2, 3} {
		files := standardFiles()[:2]
		src, dst := t.TempDir(), t.TempDir()
		out := writeFiles(t, src, files)
		forced, plain := kermit.DefaultConfig(), kermit.DefaultConfig()
		forced.Check = kermit.CheckForce3
		forced.Timeout, forced.MinTimeout = 2*time.Second, time.Second
		a, b := link(t, 0, 1)
		serr, rerr, _ := transfer(t, &damageFirst{Conn: a, n: n}, b, forced, plain, out, dst)
		if serr != nil || rerr != nil {
			t.Fatalf("%d damaged: send: %v, receive: %v", n, serr, rerr)
		}
		checkFiles(t, dst, files)
	}
}
