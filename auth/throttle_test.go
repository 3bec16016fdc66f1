package auth

import (
	"net"
	"testing"
)

// Limits per host count an IPv6 host by its /64, an IPv4 one by its
// address.
func TestHostKey(t *testing.T) {
	same := [][2]string{
		{"2001:db8::1", "2001:db8::ffff:1"},
		{"2001:db8:0:7::1", "2001:db8:0:7:abcd::9"},
		{"192.0.2.7", "::ffff:192.0.2.7"},
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
