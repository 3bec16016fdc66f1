package filestore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A directory that can be read but not searched (mode 0600) is not
// entered: what came after the CD failed naming "." (QA r).
func TestChdirNeedsSearch(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"tree/noexec", "tree/ok"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "tree/noexec"), 0o600)
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "tree/noexec"), 0o755) })
	d := openTree(t, root)
	unprivileged(t, func() {
		if err := d.Chdir("tree/noexec"); err == nil || !strings.Contains(err.Error(), "tree/noexec: permission denied") {
			t.Errorf("Chdir into a directory not searchable: %v; want permission denied, naming it", err)
		}
		if d.Pwd() != "/" {
			t.Errorf("the current directory moved to %s", d.Pwd())
		}
		if err := d.Chdir("tree/ok"); err != nil || d.Pwd() != "/tree/ok" {
			t.Errorf("Chdir(tree/ok): %v, now %s", err, d.Pwd())
		}
	})
}
