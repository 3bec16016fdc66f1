package control

import (
	"net"
	"net/netip"
)

// IsLocalAddr reports whether a is an address of this machine: loopback,
// or one of its interfaces'. A peer there may see the very files this
// side serves or sends (kermit.Config.PeerLocal).
func IsLocalAddr(a net.Addr) bool {
	if a == nil {
		return false
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		host = a.String()
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().Unmap().WithZone("") == ip {
			return true
		}
	}
	return false
}
