package auth

import (
	"net"
	"slices"
	"sync"
	"time"
)

// Throttle slows down failed logins per client address and name: after
// n failures of a name from an address, the next attempt at that name
// from there waits Base * 2^(n-1) from the name's last failure, and
// after m failures from an address of names other than its most-failed
// one, every attempt from there waits Base * 2^(m-1) from the last of
// them; each at most Max. One name guessed at is held back by its own
// count, guesses spread over names (a password tried against each) by
// the address's, which grows by every guess but the one name's (a
// count of names failed let four names make four times the guesses,
// review 59); a typo on a shared address (a NAT, 127/8) holds the
// others' logins by the second term alone, whatever one name (a stale
// job's) failed (QA as: its failures and one typo held every login
// from there for 30 s). A user's successful login takes back the
// failures of that user name only: someone with an account of their
// own must not reset the count of their guesses at another's password.
// Each failure is forgotten Forget after it: before, an address's
// failures were forgotten together after Forget without one, so a name
// that never logs in (a removed account's cron job) left failures that
// every later typo, anyone's, kept alive (QA as). IPv6 addresses count
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
	fails    []throttleFail // oldest first, at most maxThrottleFails
	checking int            // attempts being checked now (Begin)
}

// throttleFail is one failed login: when, and as whom.
type throttleFail struct {
	at   time.Time
	user string
}

// maxThrottleFails bounds the failures an address's entry remembers:
// past it the oldest go (the delay is at Max long before).
const maxThrottleFails = 64

// live drops e's failures older than forget (0: none expire) and
// returns how many are left.
func (e *throttleEntry) live(now time.Time, forget time.Duration) int {
	if forget > 0 {
		i := 0
		for i < len(e.fails) && now.Sub(e.fails[i].at) >= forget {
			i++
		}
		e.fails = e.fails[i:]
	}
	return len(e.fails)
}

// last is when e's newest failure was.
func (e *throttleEntry) last() time.Time {
	if len(e.fails) == 0 {
		return time.Time{}
	}
	return e.fails[len(e.fails)-1].at
}

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

// Begin is Delay for an attempt at user about to be checked, which it
// reserves when there is no wait: an address that has failed before has
// one attempt checked at a time, and the others that come meanwhile
// wait as if it had failed (QA: fifteen guesses came at once right after
// a 30 s wait, all checked before the first failure was counted). An
// address without failures has maxFreshChecks at a time, for a client's
// several sessions logging in together; unbounded, guesses sent at once
// once an address's failures were forgotten were all checked (review
// 59b: 53 in a second). End must follow every reservation (ok), and
// only those: an End for an attempt not reserved let a third attempt be
// checked beside the one that was (review 59b). busy: refused only
// because an address without failures has maxFreshChecks attempts being
// checked (no failure to speak of).
func (t *Throttle) Begin(ip net.IP, user string) (wait time.Duration, ok, busy bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.delayLocked(ip, user); d > 0 {
		return d, false, false
	}
	k := HostKey(ip)
	e := t.m[k]
	if e == nil {
		if t.m == nil {
			t.m = map[string]*throttleEntry{}
		}
		t.pruneLocked(t.clock())
		e = &throttleEntry{}
		t.m[k] = e
	}
	limit, fresh := 1, e.live(t.clock(), t.Forget) == 0
	if fresh {
		limit = maxFreshChecks
	}
	if e.checking >= limit {
		return t.Base, false, fresh
	}
	e.checking++
	return 0, true, false
}

// maxFreshChecks is how many attempts from an address without failures
// Begin lets be checked at once.
const maxFreshChecks = 4

// End ends an attempt Begin reserved.
func (t *Throttle) End(ip net.IP) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := HostKey(ip)
	if e := t.m[k]; e != nil && e.checking > 0 {
		e.checking--
		if e.checking == 0 && e.live(t.clock(), t.Forget) == 0 {
			delete(t.m, k) // (entries of addresses that never failed do not pile up)
		}
	}
}

// Delay is how long an attempt at user from ip must wait now.
func (t *Throttle) Delay(ip net.IP, user string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delayLocked(ip, user)
}

func (t *Throttle) delayLocked(ip net.IP, user string) time.Duration {
	e := t.m[HostKey(ip)]
	if e == nil {
		return 0
	}
	now := t.clock()
	if e.live(now, t.Forget) == 0 {
		return 0
	}
	// The name's failures, and the name failed most (at most
	// maxThrottleFails failures, so counted without a map).
	var mine, top int
	var mineLast time.Time
	topName := ""
	for _, f := range e.fails {
		if f.user == user {
			mine++
			mineLast = f.at
		}
		// Of names failed as often, the one failed last: two stale
		// jobs' names then hold others by the older one's failures
		// only (review 59b: the first failed's held them 30 s).
		if n := countFunc(e.fails, func(g throttleFail) bool { return g.user == f.user }); n >= top {
			top, topName = n, f.user
		}
	}
	// The address's: every failure but the most-failed name's, from
	// the last of them.
	var others int
	var othersLast time.Time
	for _, f := range e.fails {
		if f.user != topName {
			others++
			othersLast = f.at
		}
	}
	wait := t.backoff(mine, mineLast, now)
	return max(wait, t.backoff(others, othersLast, now))
}

// countFunc counts the elements of s for which f is true.
func countFunc[E any](s []E, f func(E) bool) int {
	n := 0
	for _, e := range s {
		if f(e) {
			n++
		}
	}
	return n
}

// backoff is what is left at now of the wait after n failures, the last
// at last: Base * 2^(n-1), at most Max; 0 for none.
func (t *Throttle) backoff(n int, last, now time.Time) time.Duration {
	if n == 0 {
		return 0
	}
	d := t.Base
	for i := 1; i < n && d < t.Max; i++ {
		d *= 2
	}
	d = min(d, t.Max)
	return max(last.Add(d).Sub(now), 0)
}

// Failures is the count of failures recorded for ip and not yet
// forgotten.
func (t *Throttle) Failures(ip net.IP) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[HostKey(ip)]; e != nil {
		return e.live(t.clock(), t.Forget)
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
	}
	e.live(now, t.Forget)
	if len(e.fails) >= maxThrottleFails {
		e.fails = e.fails[1:]
	}
	e.fails = append(e.fails, throttleFail{at: now, user: user})
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
		e.fails = slices.DeleteFunc(e.fails, func(f throttleFail) bool { return f.user == user })
	}
	if e.live(t.clock(), t.Forget) == 0 && e.checking == 0 {
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
		if e.live(now, t.Forget) == 0 && e.checking == 0 {
			delete(t.m, k)
			continue
		}
		// An entry with attempts being checked is not evicted: its
		// count of them would go, and more be checked at once than
		// Begin allows (review 59c).
		if e.checking == 0 && (oldestK == "" || e.last().Before(oldest)) {
			oldestK, oldest = k, e.last()
		}
	}
	if len(t.m) >= t.MaxEntries && oldestK != "" {
		delete(t.m, oldestK)
	}
}
