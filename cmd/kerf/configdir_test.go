package main

import (
	"path/filepath"
	"testing"
)

// Without HOME (a systemd unit without User=, env -i) the configuration
// is under the home directory the password database gives, never the
// current directory (QA ak: a send -r . took ./kerf/known_hosts along,
// and a server's key depended on its working directory).
func TestConfigDirWithoutHome(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, d := range []string{defaultConfigDir(), defaultStateDir(), defaultKnownHosts(), defaultIdentityDir()} {
		if !filepath.IsAbs(d) {
			t.Errorf("%s: not absolute, so under the current directory", d)
		}
	}
}
