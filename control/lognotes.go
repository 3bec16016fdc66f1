package control

import (
	"net"
	"sync"
	"time"

	"kerf/auth"
)

// throttleNotes decides which refusals of a throttled address are worth
// a line at warn: the first, then one a minute with how many were left
// unsaid. Each refusal is answered at once, so one host with no account
// could make the server write a warning as fast as it sends logins (QA:
// 2.8 MB of log in 10 s from four loops).
type throttleNotes struct {
	mu sync.Mutex
	m  map[string]*throttleNote
}

type throttleNote struct {
	last   time.Time
	unsaid int
}

// throttleNoteEvery is how often an address's refusals are said.
const throttleNoteEvery = time.Minute

// maxThrottleNotes bounds the addresses remembered: past it, those not
// said for a minute are forgotten (and said again when next refused),
// and while all are recent a new address's refusals are not said.
const maxThrottleNotes = 4096

// note counts a refusal of ip at now, and reports whether to say it,
// with how many before it since the last said were not.
func (t *throttleNotes) note(ip net.IP, now time.Time) (say bool, unsaid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*throttleNote{}
	}
	k := auth.HostKey(ip)
	n := t.m[k]
	if n == nil {
		if len(t.m) >= maxThrottleNotes {
			for k, o := range t.m {
				if now.Sub(o.last) >= throttleNoteEvery {
					delete(t.m, k)
				}
			}
		}
		if len(t.m) >= maxThrottleNotes {
			// Thousands of addresses refused within a minute: said
			// already, each of the first; the rest is the same news.
			return false, 0
		}
		t.m[k] = &throttleNote{last: now}
		return true, 0
	}
	if now.Sub(n.last) < throttleNoteEvery {
		n.unsaid++
		return false, 0
	}
	unsaid = n.unsaid
	n.last, n.unsaid = now, 0
	return true, unsaid
}
