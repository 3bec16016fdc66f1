package kermit_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// TestSlippingLinkSeeds runs the slipping line of TestSlippingLink
// (window 31, one character in 1,000 dropped and one added) with many
// seeds, each a different pattern of damage, with short packets and
// long: what one seed never meets, one in a few hundred does (a D made
// an S or C by a character added, a lost ACK of the S, 1 KB packets
// sized before the NAKs that would have kept them short).
// KERF_SLIP_SEEDS sets how many seeds (6 by default; a few hundred to
// hunt, with -parallel 16: 150 take about 40 s on two cores);
// KERF_SLIP_BASE the first; KERF_SLIP_RATE the rate of characters
// dropped and added (1e-3); KERF_SLIP_BER a bit error rate on top (0);
// KERF_SLIP_WINDOW the window (31; 1 is stop-and-wait).
// Each run logs its time and packet counts (go test -v); a failed run
// leaves its trace of both directions, as written and as delivered, in
// the temporary directory, and so does one slower than
// KERF_SLIP_TRACE_OVER (a duration: the rare slow run, to see why).
func TestSlippingLinkSeeds(t *testing.T) {
	n, base, rate, ber, window := 6, 0, 1e-3, 0.0, 31
	if v, err := strconv.Atoi(os.Getenv("KERF_SLIP_SEEDS")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("KERF_SLIP_BASE")); err == nil {
		base = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("KERF_SLIP_RATE"), 64); err == nil {
		rate = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("KERF_SLIP_BER"), 64); err == nil {
		ber = v
	}
	if v, err := strconv.Atoi(os.Getenv("KERF_SLIP_WINDOW")); err == nil {
		window = v
	}
	traceOver, _ := time.ParseDuration(os.Getenv("KERF_SLIP_TRACE_OVER"))
	files := []testFile{{"random.bin", randomBytes(200_000, 11)}, {"all256.bin", standardFiles()[1].data}}
	for i := 0; i < 2*n; i++ {
		seed, maxPacket := base+i/2, []int{94, 9024}[i%2]
		name := fmt.Sprintf("p%d-%d", maxPacket, seed)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, dst := t.TempDir(), t.TempDir()
			out := writeFiles(t, src, files)
			cfg := kermit.DefaultConfig()
			cfg.Window, cfg.MaxPacket = window, maxPacket
			cfg.Timeout, cfg.MinTimeout = time.Second, 50*time.Millisecond
			a, b := link(t, ber, int64(7*seed+3))
			tr := &lineTrace{start: time.Now()}
			sa := &slippingConn{Conn: a, rng: rand.New(rand.NewSource(int64(2*seed + 100))), drop: rate, add: rate, name: "S", trace: tr}
			sb := &slippingConn{Conn: b, rng: rand.New(rand.NewSource(int64(2*seed + 101))), drop: rate, add: rate, name: "R", trace: tr}
			store, err := filestore.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			start := time.Now()
			serr, rerr, st := transferLinger(t, sa, sb, cfg, cfg, out, store, true)
			took := time.Since(start)
			t.Logf("%d packets sent, %d again, in %v (a receiver's linger of 1.5 s included)", st.PacketsSent, st.Retransmissions, took.Round(time.Millisecond))
			if traceOver > 0 && took > traceOver {
				t.Logf("slow: trace %s", tr.save(name))
			}
			if serr != nil || rerr != nil {
				t.Errorf("send: %v, receive: %v (stats %+v); trace: %s", serr, rerr, st, tr.save(name))
				return
			}
			checkFiles(t, dst, files)
			if t.Failed() {
				t.Logf("trace: %s", tr.save(name))
			}
		})
	}
}

// lineTrace records what each end wrote and what the line made of it.
type lineTrace struct {
	mu    sync.Mutex
	start time.Time
	buf   bytes.Buffer
}

func (l *lineTrace) add(who string, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, "%10.3fms %s %q\n", float64(time.Since(l.start).Microseconds())/1000, who, b)
}

// save writes the trace to the temporary directory and returns where.
func (l *lineTrace) save(run string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	path := filepath.Join(os.TempDir(), "kerf-slip-"+run+".trace")
	if err := os.WriteFile(path, l.buf.Bytes(), 0o644); err != nil {
		return err.Error()
	}
	return path
}
