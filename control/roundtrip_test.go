package control_test

import (
	"context"
	"testing"
	"time"

	"kerf/control"
)

// A client knows its path's round trip once it has logged in (the TLS
// handshake's; the login itself waits for the server's password hash),
// and the time a host key check took, such as a user's answer to a
// prompt, is not counted in it: the default number of sessions follows
// the round trip (four where it is 5 ms or more).
func TestRoundTripLeavesOutTheHostKeyCheck(t *testing.T) {
	srv := startServer(t, t.TempDir())
	const asking = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) {
		check := c.VerifyHost
		c.VerifyHost = func(addr, fp string) error {
			time.Sleep(asking) // as a user reading the fingerprint
			return check(addr, fp)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rt := cl.Session().RoundTrip()
	if rt <= 0 {
		t.Fatal("no round trip known after the login")
	}
	// (A loopback handshake takes milliseconds, under the race detector
	// too: the margin is the check's own second and a half.)
	if rt >= asking/2 {
		t.Errorf("round trip %v: the host key check's %v counted in it", rt, asking)
	}
}
