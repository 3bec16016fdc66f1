package auth

import (
	"net"
	"testing"
	"time"
)

// Limits per host count an IPv6 host by its /64, an IPv4 one by its
// address.
func TestHostKey(t *testing.T) {
	same := [][2]string{
		{"2001:db8::1", "2001:db8::ffff:1"},
		{"2001:db8:0:7::1", "2001:db8:0:7:abcd::9"},
		{"192.0.2.7", "::ffff:192.0.2.7"},
		{"127.0.0.1", "127.4.5.6"}, // one machine, whatever address it picks
	}
	for _, p := range same {
		if a, b := HostKey(net.ParseIP(p[0])), HostKey(net.ParseIP(p[1])); a != b {
			t.Errorf("HostKey(%s) = %s, HostKey(%s) = %s; want one host", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{"2001:db8::1", "2001:db8:0:1::1"},
		{"192.0.2.7", "192.0.2.8"},
	}
	for _, p := range differ {
		if a, b := HostKey(net.ParseIP(p[0])), HostKey(net.ParseIP(p[1])); a == b {
			t.Errorf("HostKey(%s) = HostKey(%s) = %s; want two hosts", p[0], p[1], a)
		}
	}
}

// An address that has failed has one attempt checked at a time: those
// that come while it is checked wait, though its delay has passed (QA:
// fifteen guesses checked at once after a 30 s wait). One that never
// failed is not held to one.
func TestThrottleOneAttemptAtATime(t *testing.T) {
	now := time.Unix(1000, 0)
	th := &Throttle{Base: time.Second, Max: time.Minute, Forget: time.Hour, now: func() time.Time { return now }}
	ip, other := net.ParseIP("192.0.2.1"), net.ParseIP("192.0.2.2")
	for range maxFreshChecks {
		if _, ok, _ := th.Begin(other, "bob"); !ok {
			t.Fatal("an address without failures was held to one attempt")
		}
	}
	// But not to none: guesses sent at once after an address's failures
	// were forgotten were all checked (review 59b: 53 in a second).
	if d, ok, busy := th.Begin(other, "bob"); ok || d <= 0 || !busy {
		t.Fatalf("attempt %d at once from an address without failures: %v, %v, busy %v; want a wait, said busy", maxFreshChecks+1, d, ok, busy)
	}
	for range maxFreshChecks {
		th.End(other)
	}
	if len(th.m) != 0 {
		t.Fatalf("%d entries left for addresses that never failed", len(th.m))
	}
	th.Fail(ip, "bob")
	if d, ok, _ := th.Begin(ip, "bob"); ok || d != time.Second {
		t.Fatalf("right after a failure: %v, %v; want a wait of 1s", d, ok)
	}
	now = now.Add(2 * time.Second)
	if d, ok, _ := th.Begin(ip, "bob"); !ok || d != 0 {
		t.Fatalf("after the wait: %v, %v; want the attempt", d, ok)
	}
	for range 5 {
		if d, ok, _ := th.Begin(ip, "bob"); ok || d <= 0 {
			t.Fatalf("a second attempt while one is checked: %v, %v; want a wait", d, ok)
		}
	}
	th.Fail(ip, "bob")
	th.End(ip)
	if d, ok, _ := th.Begin(ip, "bob"); ok || d != 2*time.Second {
		t.Errorf("after a second failure: %v, %v; want a wait of 2s", d, ok)
	}
	now = now.Add(3 * time.Second)
	if _, ok, _ := th.Begin(ip, "bob"); !ok {
		t.Error("the attempt after the wait was refused")
	}
}

// A full table does not evict an entry whose attempts are being
// checked: its count would go, and more be checked at once than Begin
// allows (review 59c: eight at once).
func TestThrottleKeepsEntriesBeingChecked(t *testing.T) {
	now := time.Unix(1000, 0)
	th := &Throttle{Base: time.Second, Max: time.Minute, Forget: time.Hour, MaxEntries: 4, now: func() time.Time { return now }}
	busy := net.ParseIP("192.0.2.1")
	for range maxFreshChecks {
		if _, ok, _ := th.Begin(busy, "u"); !ok {
			t.Fatal("a fresh address's first checks refused")
		}
	}
	for i := range 10 {
		now = now.Add(time.Second)
		th.Fail(net.IPv4(198, 51, 100, byte(i)), "x")
	}
	if _, ok, _ := th.Begin(busy, "u"); ok {
		t.Fatalf("a fifth check at once let through once the table filled (%d entries)", len(th.m))
	}
}
