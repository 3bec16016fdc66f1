package auth

import (
	"net"
	"sync"
	"time"
)

// Throttle slows down failed logins per client address: after n
// consecutive failures, the next attempt from that address waits
// Base * 2^(n-1), at most Max. A user's successful login takes back the
// failures of that user name only: someone with an account of their own
// must not reset the count of their guesses at another's password. An
// address with no failure for Forget is forgotten. IPv6 addresses count
// per /64, since one host usually has a whole /64.
type Throttle struct {
	Base   time.Duration
	Max    time.Duration
	Forget time.Duration
	// MaxEntries bounds memory; beyond it the oldest entries go first.
	MaxEntries int

	now func() time.Time // for tests

	mu sync.Mutex
	m  map[string]*throttleEntry
}

type throttleEntry struct {
	failures int
	checking int            // attempts being checked now (Begin)
	byUser   map[string]int // of failures, per user name tried (at most maxThrottleUsers, then "")
	last     time.Time
}

// maxThrottleUsers bounds the names an address's entry counts failures
// for; those of further names are counted together, under "", and are
// taken back by no one's success.
const maxThrottleUsers = 64

// NewThrottle returns a throttle with kerf's defaults: 500ms after the
// first failure, doubling up to 30s, forgotten after 15 minutes.
func NewThrottle() *Throttle {
	return &Throttle{Base: 500 * time.Millisecond, Max: 30 * time.Second, Forget: 15 * time.Minute, MaxEntries: 65536}
}

// HostKey names the host an address belongs to, for limits per host: an
// IPv4 address itself, an IPv6 address's /64 (one host usually has a
// whole /64, and could otherwise take a fresh address for each try),
// and all of 127.0.0.0/8 for one: any local process may send from any
// of its 16 M addresses (QA ah: 419 password checks in 25 s, none
// throttled, from 127.x.y.z).
func HostKey(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		if v4.IsLoopback() {
			return "127.0.0.0/8"
		}
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String()
}

func (t *Throttle) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// Begin is Delay for an attempt about to be checked, which it reserves
// when there is no wait: an address that has failed before has one
// attempt checked at a time, and the others that come meanwhile wait
// as if it had failed (QA: fifteen guesses came at once right after a
// 30 s wait, all checked before the first failure was counted). An
// address without failures is not held to one. End must follow a
// reservation (ok).
func (t *Throttle) Begin(ip net.IP) (wait time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.delayLocked(ip); d > 0 {
		return d, false
	}
	e := t.m[HostKey(ip)]
	if e == nil || e.failures == 0 {
		return 0, true
	}
	if e.checking > 0 {
		return t.Base, false
	}
	e.checking++
	return 0, true
}

// End ends an attempt Begin reserved.
func (t *Throttle) End(ip net.IP) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[HostKey(ip)]; e != nil && e.checking > 0 {
		e.checking--
	}
}

// Delay is how long an attempt from ip must wait now.
func (t *Throttle) Delay(ip net.IP) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delayLocked(ip)
}

func (t *Throttle) delayLocked(ip net.IP) time.Duration {
	e := t.m[HostKey(ip)]
	if e == nil || e.failures == 0 {
		return 0
	}
	now := t.clock()
	if t.Forget > 0 && now.Sub(e.last) >= t.Forget {
		return 0
	}
	d := t.Base
	for i := 1; i < e.failures && d < t.Max; i++ {
		d *= 2
	}
	d = min(d, t.Max)
	if wait := e.last.Add(d).Sub(now); wait > 0 {
		return wait
	}
	return 0
}

// Failures is the count of consecutive failures recorded for ip.
func (t *Throttle) Failures(ip net.IP) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[HostKey(ip)]; e != nil {
		return e.failures
	}
	return 0
}

// Fail records a failed login from ip as user.
func (t *Throttle) Fail(ip net.IP, user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*throttleEntry{}
	}
	now := t.clock()
	k := HostKey(ip)
	e := t.m[k]
	if e == nil {
		t.pruneLocked(now)
		e = &throttleEntry{}
		t.m[k] = e
	} else if t.Forget > 0 && now.Sub(e.last) >= t.Forget {
		e.failures, e.byUser = 0, nil
	}
	if e.byUser == nil {
		e.byUser = map[string]int{}
	}
	if _, ok := e.byUser[user]; !ok && len(e.byUser) >= maxThrottleUsers {
		user = ""
	}
	e.byUser[user]++
	e.failures++
	e.last = now
}

// Succeed takes back the failures from ip of user, who has now logged
// in: a mistyped password costs its user nothing once it is right.
func (t *Throttle) Succeed(ip net.IP, user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := HostKey(ip)
	e := t.m[k]
	if e == nil {
		return
	}
	if user != "" {
		e.failures -= e.byUser[user]
		delete(e.byUser, user)
	}
	if e.failures <= 0 {
		delete(t.m, k)
	}
}

func (t *Throttle) pruneLocked(now time.Time) {
	if t.MaxEntries <= 0 || len(t.m) < t.MaxEntries {
		return
	}
	var oldestK string
	var oldest time.Time
	for k, e := range t.m {
		if t.Forget > 0 && now.Sub(e.last) >= t.Forget {
			delete(t.m, k)
			continue
		}
		if oldestK == "" || e.last.Before(oldest) {
			oldestK, oldest = k, e.last
		}
	}
	if len(t.m) >= t.MaxEntries {
		delete(t.m, oldestK)
	}
}
