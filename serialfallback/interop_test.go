package serialfallback_test

// Interop tests: kerf's engine over a real pty line (lineem) against the
// real C-Kermit and G-Kermit, and against itself. A missing peer fails
// the test under CI=true (peertest.RequirePeer).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/framing"
	"kerf/internal/peertest"
	"kerf/kermit"
	"kerf/serialfallback"
)

// fastBaud keeps the functional matrix quick; noise tests use the same
// speed since bit errors are drawn per bit, not per second.
const fastBaud = 1152000

type setting struct {
	window, packet, check int
}

func (s setting) String() string { return fmt.Sprintf("w%d-p%d-c%d", s.window, s.packet, s.check) }

var settings = []setting{{1, 94, 1}, {31, 4096, 2}, {31, 9024, 3}}

func kerfConfig(s setting, baud int) kermit.Config {
	cfg := kermit.DefaultConfig()
	cfg.Window, cfg.MaxPacket, cfg.Check = s.window, s.packet, framing.CheckType(s.check)
	cfg.Unprefix = kermit.UnprefixMinimal // falls back to C-Kermit's set for other peers
	cfg.LineSpeed = baud
	cfg.Timeout = 2 * time.Second
	return cfg
}

func ckSettings(s setting) string {
	return fmt.Sprintf("set window %d\nset receive packet-length %d\nset block-check %d\n", s.window, s.packet, s.check)
}

// runKerf runs fn on a kerf session over dev in the background.
func runKerf(t *testing.T, dev string, baud int, cfg kermit.Config, fn func(context.Context, *kermit.Session) error) <-chan error {
	t.Helper()
	return runKerfLink(t, serialfallback.LinkConfig{Device: dev, Speed: baud}, cfg, fn)
}

// runKerfLink is runKerf on a link opened with lc.
func runKerfLink(t *testing.T, lc serialfallback.LinkConfig, cfg kermit.Config, fn func(context.Context, *kermit.Session) error) <-chan error {
	t.Helper()
	link, err := serialfallback.Open(lc)
	if err != nil {
		t.Fatalf("open %s: %v", lc.Device, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	s := kermit.NewSession(link, cfg)
	done := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		err := fn(ctx, s)
		s.Close()
		link.Close()
		cancel()
		done <- err
	}()
	// A test that fails before it waits for kerf stops it before its
	// other clean-ups (a store's Close) run: they raced with its end.
	t.Cleanup(func() { cancel(); link.Close(); <-ended })
	return done
}

func outgoing(dir string, files []peertest.File) []kermit.OutgoingFile {
	var out []kermit.OutgoingFile
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		out = append(out, kermit.OutgoingFile{Name: f.Name, Size: int64(len(f.Data)),
			Open: func() (kermit.FileReader, error) { return openFile(p) }})
	}
	return out
}

func sendKerf(files []kermit.OutgoingFile) func(context.Context, *kermit.Session) error {
	return func(ctx context.Context, s *kermit.Session) error { return s.Send(ctx, files) }
}

func receiveKerf(t *testing.T, dir string) func(context.Context, *kermit.Session) error {
	store, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return func(ctx context.Context, s *kermit.Session) error { return s.Receive(ctx, store) }
}

func waitKerf(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kerf %s: %v", what, err)
		}
	case <-time.After(4 * time.Minute):
		t.Fatalf("kerf %s: still running", what)
	}
}

func sendList(files []peertest.File) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = "{" + f.Name + "}"
	}
	return "msend " + strings.Join(names, " ")
}

func TestInteropMatrix(t *testing.T) {
	files := peertest.StandardFiles(300_000, 1)
	for _, st := range settings {
		t.Run("kerf-to-ckermit/"+st.String(), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			ck := peertest.CKermit(t, b, ckSettings(st)+"cd "+dst+"\nreceive", dst)
			done := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), sendKerf(outgoing(src, files)))
			waitKerf(t, done, "send")
			if err := ck.Wait(time.Minute); err != nil {
				t.Fatal(err)
			}
			peertest.CheckFiles(t, dst, files)
		})
		t.Run("ckermit-to-kerf/"+st.String(), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			done := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), receiveKerf(t, dst))
			ck := peertest.CKermit(t, b, ckSettings(st)+"cd "+src+"\n"+sendList(files), src)
			if err := ck.Wait(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			waitKerf(t, done, "receive")
			peertest.CheckFiles(t, dst, files)
		})
		t.Run("kerf-to-kerf/"+st.String(), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			rdone := runKerf(t, b, fastBaud, kerfConfig(st, fastBaud), receiveKerf(t, dst))
			sdone := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), sendKerf(outgoing(src, files)))
			waitKerf(t, sdone, "send")
			waitKerf(t, rdone, "receive")
			peertest.CheckFiles(t, dst, files)
		})
	}
	// G-Kermit has no sliding windows; it negotiates the rest down.
	for _, st := range []setting{{1, 94, 1}, {31, 9024, 3}} {
		gkermitBothWays(t, st.String(), files, nil, func(t *testing.T, dev string, fn func(context.Context, *kermit.Session) error) <-chan error {
			return runKerf(t, dev, fastBaud, kerfConfig(st, fastBaud), fn)
		})
	}
}

// A few megabytes each way with C-Kermit, with its default settings.
func TestInteropLargeFile(t *testing.T) {
	files := []peertest.File{{Name: "big.bin", Data: peertest.RandomBytes(3<<20, 7)}}
	st := setting{31, 9024, 3}
	for _, dir := range []string{"kerf-to-ckermit", "ckermit-to-kerf"} {
		t.Run(dir, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, 4*fastBaud, 0, 1)
			if dir == "kerf-to-ckermit" {
				ck := peertest.CKermit(t, b, "cd "+dst+"\nreceive", dst)
				waitKerf(t, runKerf(t, a, 4*fastBaud, kerfConfig(st, 4*fastBaud), sendKerf(outgoing(src, files))), "send")
				if err := ck.Wait(time.Minute); err != nil {
					t.Fatal(err)
				}
			} else {
				done := runKerf(t, a, 4*fastBaud, kerfConfig(st, 4*fastBaud), receiveKerf(t, dst))
				ck := peertest.CKermit(t, b, "cd "+src+"\nsend big.bin", src)
				if err := ck.Wait(2 * time.Minute); err != nil {
					t.Fatal(err)
				}
				waitKerf(t, done, "receive")
			}
			peertest.CheckFiles(t, dst, files)
		})
	}
}

// Every pairing still delivers identical files with a bit error rate of
// 1e-5 on the line.
func TestInteropNoisyLine(t *testing.T) {
	files := peertest.StandardFiles(200_000, 3)
	st := setting{31, 9024, 3}
	const ber = 1e-5
	t.Run("kerf-to-kerf", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, ber, 11)
		rdone := runKerf(t, b, fastBaud, kerfConfig(st, fastBaud), receiveKerf(t, dst))
		waitKerf(t, runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), sendKerf(outgoing(src, files))), "send")
		waitKerf(t, rdone, "receive")
		peertest.CheckFiles(t, dst, files)
	})
	t.Run("kerf-to-ckermit", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, ber, 12)
		ck := peertest.CKermit(t, b, "cd "+dst+"\nreceive", dst)
		waitKerf(t, runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), sendKerf(outgoing(src, files))), "send")
		if err := ck.Wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		peertest.CheckFiles(t, dst, files)
	})
	t.Run("ckermit-to-kerf", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, ber, 13)
		done := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), receiveKerf(t, dst))
		ck := peertest.CKermit(t, b, "cd "+src+"\n"+sendList(files), src)
		if err := ck.Wait(3 * time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "receive")
		peertest.CheckFiles(t, dst, files)
	})
	t.Run("kerf-to-gkermit", func(t *testing.T) {
		src := t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, ber, 14)
		gk := peertest.GKermit(t, b, "-i", "-P", "-w", "-r")
		waitKerf(t, runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), sendKerf(outgoing(src, files))), "send")
		if err := gk.Wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		peertest.CheckFiles(t, gk.Dir, files)
	})
	t.Run("gkermit-to-kerf", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, ber, 15)
		done := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), receiveKerf(t, dst))
		args := []string{"-i", "-P", "-s"}
		for _, f := range files {
			args = append(args, f.Name)
		}
		gk := peertest.GKermitIn(t, b, src, args...)
		if err := gk.Wait(3 * time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "receive")
		peertest.CheckFiles(t, dst, files)
	})
}

// serveOnLine runs a kerf server of root on the line dev until its
// client ends it (FINISH).
func serveOnLine(t *testing.T, dev, root string) <-chan error {
	t.Helper()
	fsys, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return runKerf(t, dev, fastBaud, kerfConfig(setting{31, 9024, 3}, fastBaud), func(ctx context.Context, s *kermit.Session) error {
		return s.Serve(ctx, fsys)
	})
}

// kerf as a server answering C-Kermit's GET, REMOTE DIRECTORY and FINISH.
func TestInteropServerGet(t *testing.T) {
	files := peertest.StandardFiles(100_000, 5)
	root, dst := t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, root, files)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	done := serveOnLine(t, a, root)
	script := "cd " + dst + "\nget random.bin\nget {name with spaces.dat}\nget *.txt\nremote directory\nfinish"
	ck := peertest.CKermit(t, b, script, dst)
	if err := ck.Wait(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	waitKerf(t, done, "server")
	var want []peertest.File
	for _, f := range files {
		if f.Name == "random.bin" || f.Name == "name with spaces.dat" || strings.HasSuffix(f.Name, ".txt") {
			want = append(want, f)
		}
	}
	peertest.CheckFiles(t, dst, want)
	if !strings.Contains(ck.Output(), "allbytes.bin") {
		t.Errorf("REMOTE DIRECTORY output does not list allbytes.bin:\n%s", ck.Output())
	}
}

// C-Kermit's REMOTE HOST is refused in words, runs nothing, and the
// server serves on (another C-Kermit's FINISH ends it).
func TestInteropServerRefusesRemoteHost(t *testing.T) {
	root, dst := t.TempDir(), t.TempDir()
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	done := serveOnLine(t, a, root)
	ran := filepath.Join(dst, "ran")
	ck := peertest.CKermit(t, b, "remote host touch "+ran, dst)
	err := ck.Wait(time.Minute) // (fails: its command failed)
	// Another C-Kermit's FINISH ends the server, which served on.
	if err := peertest.CKermit(t, b, "finish", dst).Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	waitKerf(t, done, "server")
	if said := fmt.Sprint(err, ck.Output()); !strings.Contains(said, "runs no commands") {
		t.Errorf("REMOTE HOST not refused in words:\n%s", said)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("REMOTE HOST ran its command")
	}
}

// Recovery both ways: C-Kermit's RESEND into a kerf partial, and kerf's
// --resume into a C-Kermit partial; only the rest crosses the line.
func TestInteropRecovery(t *testing.T) {
	data := peertest.RandomBytes(400_000, 21)
	files := []peertest.File{{Name: "r.bin", Data: data}}
	st := setting{31, 9024, 3}
	t.Run("ckermit-resend-to-kerf", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		peertest.WriteFiles(t, dst, []peertest.File{{Name: ".r.bin.kerf-part", Data: data[:300_000]}})
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		var moved int64
		cfg := kerfConfig(st, fastBaud)
		cfg.Events = func(e kermit.Event) {
			if e.Kind == kermit.FileDone {
				moved = e.Bytes
			}
		}
		done := runKerf(t, a, fastBaud, cfg, receiveKerf(t, dst))
		ck := peertest.CKermit(t, b, "cd "+src+"\nresend r.bin", src)
		if err := ck.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "receive")
		peertest.CheckFiles(t, dst, files)
		if moved != 100_000 {
			t.Errorf("kerf received %d bytes, want only the missing 100000", moved)
		}
	})
	t.Run("kerf-resume-to-ckermit", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		peertest.WriteFiles(t, dst, []peertest.File{{Name: "r.bin", Data: data[:250_000]}})
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		ck := peertest.CKermit(t, b, "cd "+dst+"\nreceive", dst)
		cfg := kerfConfig(st, fastBaud)
		cfg.Resume = true
		var moved, off int64
		cfg.Events = func(e kermit.Event) {
			if e.Kind == kermit.FileDone {
				moved, off = e.Bytes, e.Offset
			}
		}
		waitKerf(t, runKerf(t, a, fastBaud, cfg, sendKerf(outgoing(src, files))), "send")
		if err := ck.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		peertest.CheckFiles(t, dst, files)
		if off != 250_000 || moved != 150_000 {
			t.Errorf("kerf resumed at %d and sent %d bytes, want 250000 and 150000", off, moved)
		}
	})
}

// The receiver answers the Send-Init with the block check it will use:
// the sender's. C-Kermit sending with one check to a kerf configured for
// another must work (it adopts the type in kerf's ACK), and so must kerf
// sending to a C-Kermit configured for another.
func TestInteropMismatchedBlockCheck(t *testing.T) {
	files := peertest.StandardFiles(50_000, 2)
	for _, pair := range [][2]int{{1, 3}, {2, 3}, {3, 1}, {3, 2}} {
		ckCheck, kerfCheck := pair[0], pair[1]
		t.Run(fmt.Sprintf("ckermit-c%d-to-kerf-c%d", ckCheck, kerfCheck), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			done := runKerf(t, a, fastBaud, kerfConfig(setting{31, 4096, kerfCheck}, fastBaud), receiveKerf(t, dst))
			ck := peertest.CKermit(t, b, ckSettings(setting{31, 4096, ckCheck})+"cd "+src+"\n"+sendList(files), src)
			if err := ck.Wait(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			waitKerf(t, done, "receive")
			peertest.CheckFiles(t, dst, files)
		})
		t.Run(fmt.Sprintf("kerf-c%d-to-ckermit-c%d", kerfCheck, ckCheck), func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			ck := peertest.CKermit(t, b, ckSettings(setting{31, 4096, ckCheck})+"cd "+dst+"\nreceive", dst)
			done := runKerf(t, a, fastBaud, kerfConfig(setting{31, 4096, kerfCheck}, fastBaud), sendKerf(outgoing(src, files)))
			waitKerf(t, done, "send")
			if err := ck.Wait(time.Minute); err != nil {
				t.Fatal(err)
			}
			peertest.CheckFiles(t, dst, files)
		})
	}
}

// G-Kermit sends an empty F packet for a name it cannot convert (non-ASCII,
// helper sweep); kerf stores such files as C-Kermit does, NONAME and then
// NONAME.2, instead of refusing them.
func TestGKermitUnconvertibleNames(t *testing.T) {
	files := []peertest.File{{Name: "ünïcødé.txt", Data: []byte("first")}, {Name: "日本.txt", Data: []byte("second")}}
	src, dst := t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, src, files)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	done := runKerf(t, a, fastBaud, kerfConfig(setting{1, 94, 1}, fastBaud), receiveKerf(t, dst))
	gk := peertest.GKermitIn(t, b, src, "-P", "-s", files[0].Name, files[1].Name)
	if err := gk.Wait(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	waitKerf(t, done, "receive")
	peertest.CheckFiles(t, dst, []peertest.File{{Name: "NONAME", Data: files[0].Data}, {Name: "NONAME.2", Data: files[1].Data}})
}

// C-Kermit's SET BLOCK-CHECK 5 ("FORCE-3") uses the 16-bit CRC on every
// packet, the Send-Init and its ACK included, where every other setting
// uses the 6-bit checksum for those two.
func TestInteropCKermitForce3(t *testing.T) {
	files := peertest.StandardFiles(100_000, 2)
	st := setting{31, 4096, 3}
	ck := "set window 31\nset receive packet-length 4096\nset block-check 5\n"
	t.Run("kerf-to-ckermit", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		c := peertest.CKermit(t, b, ck+"cd "+dst+"\nreceive", dst)
		done := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), sendKerf(outgoing(src, files)))
		waitKerf(t, done, "send")
		if err := c.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		peertest.CheckFiles(t, dst, files)
	})
	t.Run("ckermit-to-kerf", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		done := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), receiveKerf(t, dst))
		c := peertest.CKermit(t, b, ck+"cd "+src+"\n"+sendList(files), src)
		if err := c.Wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "receive")
		peertest.CheckFiles(t, dst, files)
	})
}

// kerf forcing type 3 (--block-check 5) receiving from a C-Kermit that
// does not: C-Kermit's type-1 Send-Init is named as the cause at its
// second try (QA ae: it was ignored, and kerf gave up after its own
// retries, 111 s, with no word of why).
func TestInteropCKermitNotForcingType3(t *testing.T) {
	files := peertest.StandardFiles(1000, 1)
	src, dst := t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, src, files)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	cfg := kerfConfig(setting{31, 4096, 3}, fastBaud)
	cfg.Check = kermit.CheckForce3
	receive := receiveKerf(t, dst)
	var bad int64
	done := runKerf(t, a, fastBaud, cfg, func(ctx context.Context, s *kermit.Session) error {
		err := receive(ctx, s)
		bad = s.Stats().BadPackets
		return err
	})
	c := peertest.CKermit(t, b, "cd "+src+"\n"+sendList(files), src)
	defer c.Wait(0)
	select {
	case err := <-done:
		if !errors.Is(err, kermit.ErrPeerNotForce3) {
			t.Fatalf("kerf receive: %v; want the peer named as not forcing type 3", err)
		}
		// At its second Send-Init: the first alone is taken for damage.
		if bad != 1 {
			t.Errorf("%d packets taken for damage before the peer was named; want 1", bad)
		}
	case <-time.After(4 * time.Minute):
		t.Fatal("kerf receive: still running")
	}
	// C-Kermit reads kerf's E, a short type-1 packet, and says why (QA
	// an: sent with type 3, it was taken for damage, and C-Kermit
	// waited out its retries, 81 s, then failed with no reason). Killed
	// after the minute it would take otherwise.
	c.Wait(time.Minute)
	if !strings.Contains(c.Report(), "BLOCK-CHECK 5") {
		t.Errorf("C-Kermit did not hear kerf's reason:\n%s", c.Report())
	}
}

// TestInteropGKermitHasNoBlockCheck5: G-Kermit has no block check 5.
// kerf forcing it ends both sides at once with its reason, each way.
// Sending, kerf once took G-Kermit's type-1 NAKs of its type-3 S for
// damage and resent it to its retry limit (QA an: 101 s, "too many
// retries"), and its E, numbered past the S, was dropped by G-Kermit.
func TestInteropGKermitHasNoBlockCheck5(t *testing.T) {
	files := peertest.StandardFiles(1000, 1)
	cfg := kerfConfig(setting{1, 4096, 3}, fastBaud)
	cfg.Check = kermit.CheckForce3
	// heardE waits for G-Kermit's end and checks it read kerf's E: it
	// prints no message, but its debug log shows the packet.
	heardE := func(t *testing.T, gk *peertest.Peer, log string) {
		t.Helper()
		if err := gk.Wait(30 * time.Second); err == nil {
			t.Error("G-Kermit exited 0 from a transfer that could not start")
		} else if gk.ExitCode() < 0 {
			t.Fatal(err)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "rpacket type=E, seq=00") {
			t.Errorf("G-Kermit did not take kerf's E:\n%s", b)
		}
	}
	notForce3 := func(t *testing.T, done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			if !errors.Is(err, kermit.ErrPeerNotForce3) {
				t.Fatalf("kerf: %v; want the peer named as not forcing type 3", err)
			}
		case <-time.After(4 * time.Minute):
			t.Fatal("kerf: still running")
		}
	}
	t.Run("kerf-sends", func(t *testing.T) {
		src := t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		log := filepath.Join(t.TempDir(), "gk.log")
		gk := peertest.GKermit(t, b, "-i", "-d", log, "-r")
		notForce3(t, runKerf(t, a, fastBaud, cfg, sendKerf(outgoing(src, files))))
		heardE(t, gk, log)
	})
	t.Run("gkermit-sends", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		done := runKerf(t, a, fastBaud, cfg, receiveKerf(t, dst))
		log := filepath.Join(t.TempDir(), "gk.log")
		gk := peertest.GKermit(t, b, "-i", "-d", log, "-s", filepath.Join(src, files[0].Name))
		notForce3(t, done)
		heardE(t, gk, log)
	})
}

// A kerf sender forcing type 3 to a C-Kermit not set to it, started a
// while before (so its type-1 NAKs of the S it waits for are on the line
// already), goes on: C-Kermit reads the type-3 S's "5" and follows. The
// waiting NAKs came as a burst, which counts as one (review 57: two of
// them ended the send with "the peer does not use block check 5").
func TestInteropForce3SenderAfterCKermitWaited(t *testing.T) {
	files := peertest.StandardFiles(1000, 1)
	src, dst := t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, src, files)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	c := peertest.CKermit(t, b, "set receive timeout 5\ncd "+dst+"\nreceive", dst)
	defer c.Wait(0)
	time.Sleep(22 * time.Second) // NAKs waiting
	cfg := kerfConfig(setting{31, 4096, 3}, fastBaud)
	cfg.Check = kermit.CheckForce3
	waitKerf(t, runKerf(t, a, fastBaud, cfg, sendKerf(outgoing(src, files))), "send")
	if err := c.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	peertest.CheckFiles(t, dst, files)
}

// gkermitBothWays runs kerf (started by run on its end of the line)
// sending to G-Kermit and then receiving from it, G-Kermit with gkArgs
// besides its usual ones, and checks the files arrived whole.
func gkermitBothWays(t *testing.T, name string, files []peertest.File, gkArgs []string, run func(t *testing.T, dev string, fn func(context.Context, *kermit.Session) error) <-chan error) {
	t.Run("kerf-to-gkermit/"+name, func(t *testing.T) {
		src := t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		gk := peertest.GKermit(t, b, append(append([]string{"-i", "-P", "-w"}, gkArgs...), "-r")...)
		done := run(t, a, sendKerf(outgoing(src, files)))
		waitKerf(t, done, "send")
		if err := gk.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		peertest.CheckFiles(t, gk.Dir, files)
	})
	t.Run("gkermit-to-kerf/"+name, func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		done := run(t, a, receiveKerf(t, dst))
		args := append(append([]string{"-i", "-P"}, gkArgs...), "-s")
		for _, f := range files {
			args = append(args, f.Name)
		}
		gk := peertest.GKermitIn(t, b, src, args...)
		if err := gk.Wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "receive")
		peertest.CheckFiles(t, dst, files)
	})
}

// Streaming to G-Kermit on a line of real speed: the D packets written
// ahead fill the line for a while, and the Z's ACK comes only after they
// have crossed it. kerf timed the Z as if the line were empty, sent it
// again, and G-Kermit, for which any repeated packet while streaming is
// fatal, ended the transfer ("Transmission error while streaming").
func TestStreamingToGKermitAtLineSpeed(t *testing.T) {
	const baud = 115200
	files := []peertest.File{{Name: "a.bin", Data: peertest.RandomBytes(25600, 31)}, {Name: "b.txt", Data: []byte("hello\n")}, {Name: "c.bin", Data: peertest.RandomBytes(30000, 32)}}
	src := t.TempDir()
	peertest.WriteFiles(t, src, files)
	a, b := peertest.StartLineem(t, baud, 0, 1)
	gk := peertest.GKermit(t, b, "-i", "-r")
	cfg := kerfConfig(setting{1, 4000, 1}, baud)
	cfg.Streaming = true
	done := runKerf(t, a, baud, cfg, sendKerf(outgoing(src, files)))
	waitKerf(t, done, "send")
	if err := gk.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	peertest.CheckFiles(t, gk.Dir, files)
}

// A C-Kermit receiver whose SET FILE COLLISION UPDATE keeps a newer copy
// refuses the file for its date: a skip on purpose, which C-Kermit's own
// sender counts as success. kerf's send succeeds too, reporting the file
// as declined, and sends the rest.
func TestCKermitCollisionUpdateIsNotAFailure(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	old := []byte("the sender's older copy\n")
	newer := []byte("the receiver's newer copy\n")
	fresh := peertest.RandomBytes(3000, 41)
	os.WriteFile(filepath.Join(src, "a.txt"), old, 0o644)
	os.WriteFile(filepath.Join(src, "b.bin"), fresh, 0o644)
	os.WriteFile(filepath.Join(dst, "a.txt"), newer, 0o644)
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(src, "a.txt"), past, past)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	ck := peertest.CKermit(t, b, "set file collision update\ncd "+dst+"\nreceive", dst)
	cfg := kerfConfig(setting{31, 4096, 2}, fastBaud)
	var declined []string
	cfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileSkipped && errors.Is(e.Err, kermit.ErrDeclined) {
			declined = append(declined, e.Name)
		}
	}
	files := []kermit.OutgoingFile{}
	for _, n := range []string{"a.txt", "b.bin"} {
		p := filepath.Join(src, n)
		fi, _ := os.Stat(p)
		files = append(files, kermit.OutgoingFile{Name: n, Size: fi.Size(), ModTime: fi.ModTime(),
			Open: func() (kermit.FileReader, error) { return openFile(p) }})
	}
	waitKerf(t, runKerf(t, a, fastBaud, cfg, sendKerf(files)), "send")
	if err := ck.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(declined) != 1 || declined[0] != "a.txt" {
		t.Errorf("declined: %q, want a.txt", declined)
	}
	peertest.CheckFiles(t, dst, []peertest.File{{Name: "a.txt", Data: newer}, {Name: "b.bin", Data: fresh}})
}

// A file that grows while kerf sends it to C-Kermit is discarded with
// its Z, but C-Kermit keeps an incomplete file by default: the failure
// says the receiver was told to discard it and may keep what came, not
// that it is not stored (QA: C-Kermit kept 131,072 bytes under the
// name kerf had said was not stored).
func TestChangedFileToCKermitSaysWhatItGot(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	data := peertest.RandomBytes(200_000, 42)
	p := filepath.Join(src, "grows.log")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	ck := peertest.CKermit(t, b, "cd "+dst+"\nreceive", dst)
	cfg := kerfConfig(setting{31, 4096, 2}, fastBaud)
	var why []string
	cfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileFailed {
			why = append(why, e.Err.Error())
		}
	}
	files := []kermit.OutgoingFile{{Name: "grows.log", Size: fi.Size(), ModTime: fi.ModTime(),
		Open: func() (kermit.FileReader, error) {
			r, err := openFile(p)
			if err == nil {
				f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
				} else {
					f.Write([]byte("a line written while the file was sent\n"))
					f.Close()
				}
			}
			return r, err
		}}}
	done := runKerf(t, a, fastBaud, cfg, sendKerf(files))
	var err error
	select {
	case err = <-done:
	case <-time.After(4 * time.Minute):
		t.Fatal("kerf send: still running")
	}
	var ge *kermit.GroupError
	if !errors.As(err, &ge) || len(ge.Failed) != 1 {
		t.Fatalf("send: %v; want grows.log failed", err)
	}
	ck.Wait(time.Minute)
	if len(why) != 1 || strings.Contains(why[0], "not stored") || !strings.Contains(why[0], "told to discard") {
		t.Errorf("failure reported: %q; want the receiver told to discard it, not \"not stored\"", why)
	}
}

// G-Kermit sending in binary mode converts names to capitals (DATA.BIN
// for data.bin); a Unix Kermit's names are stored as they come, as
// C-Kermit 10's receiver stores G-Kermit's (its automatic mode between
// like systems): DATA.BIN, not data.bin. With -P (literal) G-Kermit
// sends the names as they are. (kerf lowered them, and so a README from
// a C-Kermit server became readme.)
func TestGKermitNamesStoredAsSent(t *testing.T) {
	data := peertest.RandomBytes(2000, 51)
	files := []peertest.File{{Name: "data.bin", Data: data}, {Name: "README", Data: []byte("x\n")}}
	src := t.TempDir()
	peertest.WriteFiles(t, src, files)
	for _, tc := range []struct {
		flags []string
		want  []peertest.File
	}{
		{[]string{"-i"}, []peertest.File{{Name: "DATA.BIN", Data: data}, {Name: "README", Data: []byte("x\n")}}},
		{[]string{"-i", "-P"}, files},
	} {
		dst := t.TempDir()
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		done := runKerf(t, a, fastBaud, kerfConfig(setting{1, 94, 1}, fastBaud), receiveKerf(t, dst))
		gk := peertest.GKermitIn(t, b, src, append(tc.flags, "-s", "data.bin", "README")...)
		if err := gk.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "receive")
		peertest.CheckFiles(t, dst, tc.want)
		if ents, _ := os.ReadDir(dst); len(ents) != 2 {
			t.Errorf("gkermit %v: %d files stored, want 2", tc.flags, len(ents))
		}
	}
}

// A name longer than a C-Kermit receiver's packets (SET RECEIVE
// PACKET-LENGTH 40) goes in an F of up to 94 bytes, as C-Kermit sends
// it: the send failed ("does not fit one packet").
func TestLongNameToSmallPackets(t *testing.T) {
	files := []peertest.File{{Name: "a_very_long_file_name_that_exceeds_the_small_packets_of_a_receiver_of_forty.bin", Data: []byte("a file with a long name\n")}}
	src, dst := t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, src, files)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	ck := peertest.CKermit(t, b, "set receive packet-length 40\nset file names literal\ncd "+dst+"\nreceive", dst)
	done := runKerf(t, a, fastBaud, kerfConfig(setting{1, 94, 1}, fastBaud), sendKerf(outgoing(src, files)))
	waitKerf(t, done, "send")
	if err := ck.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
	peertest.CheckFiles(t, dst, files)
}

// kerf asking for 40-byte packets (serial receive --packet-length 40,
// below a short packet's 94: MAXL alone, no long packets) gets short
// ones from C-Kermit. C-Kermit counts MAXL without SEQ, TYPE and a type 3
// check (its LEN comes to MAXL+5, as its packet log shows); asked for
// 94 or more, it sends 94 and long packets.
func TestCKermitSendsShortPacketsAskedFor(t *testing.T) {
	files := peertest.StandardFiles(30_000, 7)
	src, dst := t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, src, files)
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	st := setting{4, 40, 3}
	done := runKerf(t, a, fastBaud, kerfConfig(st, fastBaud), receiveKerf(t, dst))
	pktLog := filepath.Join(t.TempDir(), "packets.log")
	ck := peertest.CKermit(t, b, "set window 4\nset block-check 3\nlog packets {"+pktLog+"}\ncd "+src+"\n"+sendList(files), src)
	if err := ck.Wait(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	waitKerf(t, done, "receive")
	peertest.CheckFiles(t, dst, files)
	lens := ckSentLens(t, pktLog, 'D')
	if len(lens) < 30_000/45 {
		t.Fatalf("%d D packets in C-Kermit's log %s, want over %d", len(lens), pktLog, 30_000/45)
	}
	for _, n := range lens {
		if n <= 0 || n > st.packet+5 {
			t.Fatalf("C-Kermit sent a D packet of LEN %d (0: long), asked for %d", n, st.packet)
		}
	}
}

// ckSentLens reads C-Kermit's packet log (LOG PACKETS: "s-SEQ-TRY-^A",
// the control characters written as ^X, then LEN, SEQ and TYPE) and
// returns the LEN of each packet it sent of type typ.
func ckSentLens(t *testing.T, path string, typ byte) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "s-")
		if !ok {
			continue
		}
		i := strings.Index(rest, "^A")
		if i < 0 || len(rest) < i+5 || rest[i+4] != typ {
			continue
		}
		lens = append(lens, int(rest[i+2])-32)
	}
	return lens
}

// C-Kermit with SET SEND and SET RECEIVE START-OF-PACKET 2 (for a line
// that eats Ctrl-A) and kerf with the same mark: files with every byte
// value, Ctrl-B among them (prefixed, so that it never starts a packet
// inside one), cross both ways. C-Kermit prefixes a new mark only once
// SET PREFIXING runs again after it (ckuus7.c sets mystch and leaves
// ctlp alone), which a C-Kermit user needs for C-Kermit at the other
// end too. kerf at the default mark sees none of C-Kermit's packets.
func TestInteropStartOfPacket(t *testing.T) {
	files := peertest.StandardFiles(60_000, 5)
	const ckMark = "set send start-of-packet 2\nset receive start-of-packet 2\nset prefixing cautious\n"
	st := setting{31, 4096, 3}
	cfg := kerfConfig(st, fastBaud)
	cfg.Mark = 2
	t.Run("ckermit-to-kerf", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		done := runKerf(t, a, fastBaud, cfg, receiveKerf(t, dst))
		ck := peertest.CKermit(t, b, ckMark+ckSettings(st)+"cd "+src+"\n"+sendList(files), src)
		if err := ck.Wait(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		waitKerf(t, done, "receive")
		peertest.CheckFiles(t, dst, files)
	})
	t.Run("kerf-to-ckermit", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files)
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		ck := peertest.CKermit(t, b, ckMark+ckSettings(st)+"cd "+dst+"\nreceive", dst)
		done := runKerf(t, a, fastBaud, cfg, sendKerf(outgoing(src, files)))
		waitKerf(t, done, "send")
		if err := ck.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		peertest.CheckFiles(t, dst, files)
	})
	t.Run("marks differ", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		peertest.WriteFiles(t, src, files[:1])
		a, b := peertest.StartLineem(t, fastBaud, 0, 1)
		ck := peertest.CKermit(t, b, ckMark+"cd "+dst+"\nreceive", dst)
		other := kerfConfig(st, fastBaud)
		other.Timeout, other.MaxRetries = 500*time.Millisecond, 3
		done := runKerf(t, a, fastBaud, other, sendKerf(outgoing(src, files[:1])))
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("kerf at mark 1 sent to C-Kermit at mark 2")
			}
		case <-time.After(time.Minute):
			t.Fatal("kerf send still running")
		}
		ck.Wait(0) // killed: it would wait out its own timeouts
	})
}

// A kerf receiver that stops (Ctrl-C) tells a stop-and-wait sender so
// with an E of the number the sender waits on: G-Kermit drops a packet
// of any other number, and went on resending its data packet (QA: kerf's
// E carried the Send-Init's number, 1, whatever the transfer had come
// to). The E goes again a second later: G-Kermit empties its input after
// the ACK it reads, and one right behind it was lost (one run in four).
func TestGKermitSenderTakesReceiversCancel(t *testing.T) {
	data := peertest.RandomBytes(2_000_000, 43)
	src, dst := t.TempDir(), t.TempDir()
	peertest.WriteFiles(t, src, []peertest.File{{Name: "r.bin", Data: data}})
	a, b := peertest.StartLineem(t, fastBaud, 0, 1)
	cfg := kerfConfig(setting{1, 9024, 3}, fastBaud)
	receive := stoppedAfter(&cfg, 100_000, receiveKerf(t, dst))
	done := runKerf(t, a, fastBaud, cfg, receive)
	gk := peertest.GKermitIn(t, b, src, "-d", "-i", "-P", "-s", "r.bin")
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("kerf receive: %v, want it canceled", err)
	}
	err := gk.Wait(time.Minute)
	if err == nil {
		t.Fatal("G-Kermit says it sent the file, which kerf stopped taking")
	}
	// (G-Kermit, a remote-mode Kermit, says nothing of it on its
	// terminal: its debug log, -d, says what it took.)
	if log, _ := os.ReadFile(filepath.Join(src, "debug.log")); !bytes.Contains(log, []byte("input[E]")) || !bytes.Contains(log, []byte("Transfer canceled")) {
		t.Errorf("G-Kermit did not take kerf's E: %v\n%s", err, log[max(0, len(log)-2000):])
	}
}

// A kerf sender that stops (Ctrl-C) right behind a data packet tells a
// G-Kermit receiver so: G-Kermit throws away what came behind the packet
// it answers, the E too (QA: it went on waiting, and left the part it had
// under the file's name), so the E goes again once that answer is past.
func TestGKermitReceiverTakesSendersCancel(t *testing.T) {
	for run := range 3 {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			data := peertest.RandomBytes(2_000_000, 44+int64(run))
			src := t.TempDir()
			peertest.WriteFiles(t, src, []peertest.File{{Name: "r.bin", Data: data}})
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			gk := peertest.GKermit(t, b, "-d", "-i", "-P", "-r")
			cfg := kerfConfig(setting{1, 9024, 3}, fastBaud)
			send := stoppedAfter(&cfg, 100_000+int64(run)*20_000, sendKerf(outgoing(src, []peertest.File{{Name: "r.bin", Data: data}})))
			done := runKerf(t, a, fastBaud, cfg, send)
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("kerf send: %v, want it canceled", err)
			}
			err := gk.Wait(time.Minute)
			if log, _ := os.ReadFile(filepath.Join(gk.Dir, "debug.log")); err == nil || !bytes.Contains(log, []byte("input[E]")) {
				t.Errorf("G-Kermit did not take kerf's E: %v\n%s", err, log[max(0, len(log)-2000):])
			}
		})
	}
}

// stoppedAfter is fn canceled, as Ctrl-C cancels it, once a file has
// moved more than n bytes (told by cfg's Events, which it sets: call it
// before cfg is handed on).
func stoppedAfter(cfg *kermit.Config, n int64, fn func(context.Context, *kermit.Session) error) func(context.Context, *kermit.Session) error {
	got := make(chan struct{})
	var once sync.Once
	cfg.Events = func(e kermit.Event) {
		if e.Kind == kermit.FileProgress && e.Bytes > n {
			once.Do(func() { close(got) })
		}
	}
	return func(ctx context.Context, s *kermit.Session) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-got:
				cancel()
			case <-ctx.Done():
			}
		}()
		return fn(ctx, s)
	}
}
