package serialfallback_test

import (
	"context"
	"testing"
	"time"

	"kerf/internal/peertest"
	"kerf/kermit"
	"kerf/serialfallback"
)

// runKerfParity is runKerf with software parity on kerf's side of the
// line, or with "auto" none until the peer is found to use parity.
func runKerfParity(t *testing.T, dev, parity string, cfg kermit.Config, fn func(context.Context, *kermit.Session) error) <-chan error {
	t.Helper()
	lc := serialfallback.LinkConfig{Device: dev, Speed: fastBaud, Parity: parity}
	if parity == "auto" { // as kerf serial --parity auto
		lc.Parity, cfg.DetectParity = "none", true
	}
	link, err := serialfallback.Open(lc)
	if err != nil {
		t.Fatalf("open %s: %v", dev, err)
	}
	cfg.Parity = lc.SevenBit()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	s := kermit.NewSession(link, cfg)
	done := make(chan error, 1)
	go func() {
		err := fn(ctx, s)
		s.Close()
		link.Close()
		cancel()
		done <- err
	}()
	return done
}

// C-Kermit with SET PARITY, kerf with the same --parity: binary files,
// every byte value among them, cross a 7-bit line both ways through
// 8th-bit prefixing.
func TestInteropParity(t *testing.T) {
	files := peertest.StandardFiles(50_000, 3)
	st := setting{31, 4096, 3}
	for _, par := range []string{"even", "odd", "mark", "space"} {
		t.Run("ckermit-to-kerf/"+par, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			done := runKerfParity(t, a, par, kerfConfig(st, fastBaud), receiveKerf(t, dst))
			ck := peertest.CKermit(t, b, "set parity "+par+"\n"+ckSettings(st)+"cd "+src+"\n"+sendList(files), src)
			if err := ck.Wait(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			waitKerf(t, done, "receive")
			peertest.CheckFiles(t, dst, files)
		})
		t.Run("kerf-to-ckermit/"+par, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			ck := peertest.CKermit(t, b, "set parity "+par+"\n"+ckSettings(st)+"cd "+dst+"\nreceive", dst)
			done := runKerfParity(t, a, par, kerfConfig(st, fastBaud), sendKerf(outgoing(src, files)))
			waitKerf(t, done, "send")
			if err := ck.Wait(time.Minute); err != nil {
				t.Fatal(err)
			}
			peertest.CheckFiles(t, dst, files)
		})
	}
}

// kerf set to no parity against C-Kermit using parity: kerf sees the 8th
// bit set on the peer's first packet, takes the parity it finds (even,
// odd or mark; space parity looks like none and needs no change to read)
// and uses it from then on, both as receiver and as sender.
func TestInteropParityDetected(t *testing.T) {
	files := peertest.StandardFiles(50_000, 4)
	st := setting{31, 4096, 3}
	for _, par := range []string{"even", "odd", "mark"} {
		t.Run("ckermit-to-kerf/"+par, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			done := runKerfParity(t, a, "auto", kerfConfig(st, fastBaud), receiveKerf(t, dst))
			ck := peertest.CKermit(t, b, "set parity "+par+"\n"+ckSettings(st)+"cd "+src+"\n"+sendList(files), src)
			if err := ck.Wait(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			waitKerf(t, done, "receive")
			peertest.CheckFiles(t, dst, files)
		})
		t.Run("kerf-to-ckermit/"+par, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			ck := peertest.CKermit(t, b, "set parity "+par+"\n"+ckSettings(st)+"cd "+dst+"\nreceive", dst)
			done := runKerfParity(t, a, "auto", kerfConfig(st, fastBaud), sendKerf(outgoing(src, files)))
			waitKerf(t, done, "send")
			if err := ck.Wait(time.Minute); err != nil {
				t.Fatal(err)
			}
			peertest.CheckFiles(t, dst, files)
		})
	}
}

// The same with G-Kermit's -p: kerf finds its parity both ways.
func TestInteropParityDetectedGKermit(t *testing.T) {
	files := peertest.StandardFiles(20_000, 5)
	st := setting{1, 94, 1} // G-Kermit has no sliding windows
	for _, par := range []string{"e", "o", "m"} {
		t.Run("gkermit-to-kerf/"+par, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			done := runKerfParity(t, a, "auto", kerfConfig(st, fastBaud), receiveKerf(t, dst))
			args := []string{"-i", "-P", "-p", par, "-s"}
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
		t.Run("kerf-to-gkermit/"+par, func(t *testing.T) {
			src := t.TempDir()
			peertest.WriteFiles(t, src, files)
			a, b := peertest.StartLineem(t, fastBaud, 0, 1)
			gk := peertest.GKermit(t, b, "-i", "-P", "-w", "-p", par, "-r")
			done := runKerfParity(t, a, "auto", kerfConfig(st, fastBaud), sendKerf(outgoing(src, files)))
			waitKerf(t, done, "send")
			if err := gk.Wait(time.Minute); err != nil {
				t.Fatal(err)
			}
			peertest.CheckFiles(t, gk.Dir, files)
		})
	}
}
