package testproc

import (
	"os"
	"strings"
	"testing"
)

// AllowedCongestion returns a TCP congestion control that unprivileged
// processes (and so a client's request) may choose here and that is not
// the system's default, so that a test sees the choice take effect; it
// skips t where there is none (Linux's tcp_allowed_congestion_control
// holds only the default).
func AllowedCongestion(t testing.TB) string {
	t.Helper()
	def, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	allowed, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	if err != nil {
		t.Skipf("no list of allowed congestion controls here: %v", err)
	}
	for _, a := range strings.Fields(string(allowed)) {
		if a != strings.TrimSpace(string(def)) {
			return a
		}
	}
	t.Skipf("no congestion control allowed here but the default (%s): nothing to see change", strings.TrimSpace(string(allowed)))
	return ""
}
