package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// otherMachine makes a network namespace joined to this one by a veth
// pair and returns the command prefix that runs a program in it and its
// address: a server there is another machine to kerf (its address none
// of the client's, the client's none of its), while both still see one
// file system, as two machines mounting one NFS export do. It needs
// root and ip(8); without them the test is skipped, or fails under
// CI=true.
func otherMachine(t *testing.T) (wrap []string, addr string) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "a network namespace: needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable(t, "a network namespace: ip(8) not found (Debian: apt-get install iproute2)")
	}
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	// A run killed at its timeout left its namespace and link, whose
	// subnet a later run could pick (review 59: connection refused):
	// those of processes gone are removed, and the subnet is one no
	// address of this host is in.
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			var pid int
			if _, err := fmt.Sscanf(f, "kerf-e2e-%d", &pid); err == nil && pid != os.Getpid() {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
					run("link", "del", fmt.Sprintf("kfh%d", pid))
					run("netns", "del", f)
				}
			}
		}
	}
	addrs, _ := exec.Command("ip", "-4", "-o", "addr").Output()
	n := os.Getpid() % 200
	for i := range 200 {
		if n = (os.Getpid() + i) % 200; !strings.Contains(string(addrs), fmt.Sprintf(" 10.201.%d.", n)) {
			break
		}
	}
	ns, here, there := fmt.Sprintf("kerf-e2e-%d", os.Getpid()), fmt.Sprintf("kfh%d", os.Getpid()), fmt.Sprintf("kft%d", os.Getpid())
	hostAddr, nsAddr := fmt.Sprintf("10.201.%d.1", n), fmt.Sprintf("10.201.%d.2", n)
	if err := run("netns", "add", ns); err != nil {
		unavailable(t, "a network namespace: "+err.Error())
	}
	t.Cleanup(func() { run("link", "del", here); run("netns", "del", ns) })
	for _, args := range [][]string{
		{"link", "add", here, "type", "veth", "peer", "name", there},
		{"link", "set", there, "netns", ns},
		{"addr", "add", hostAddr + "/24", "dev", here},
		{"link", "set", here, "up"},
		{"-n", ns, "addr", "add", nsAddr + "/24", "dev", there},
		{"-n", ns, "link", "set", there, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"ip", "netns", "exec", ns}, nsAddr
}

// unavailable skips the test for why, what it needs not being here;
// under CI=true, where .ci/run installs it, it fails instead.
func unavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true, so this is a failure, not a skip", why)
	}
	t.Skip(why)
}

// A move between two machines that share a file system: the server
// elsewhere finds "already there" what is the client's very file, seen
// through the shared tree, and says so by its inode number; the client
// keeps it (before, it removed the only copy), and a server moving
// files to a client in the same plight keeps its own. A copy of
// another inode number is removed as before, both ways.
func TestMoveAcrossSharedFileSystem(t *testing.T) {
	wrap, host := otherMachine(t)
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{host: host, wrap: wrap})
	if strings.HasPrefix(srv.addr, "127.") {
		t.Fatalf("server listens on %s", srv.addr)
	}
	when := time.Now().Add(-time.Hour).Truncate(time.Second)
	put := func(p string, seed uint64) {
		writeFile(t, p, randomBytes(50000, seed))
		os.Chtimes(p, when, when)
	}

	// send: the very file, named by its path in the server's tree: the
	// directory probe (ontoitself.go) refuses the move before anything
	// goes, the server's listing seeing the probe's file.
	very := filepath.Join(root, "very.bin")
	put(very, 1)
	r := run(t, srv, local, nil, "send", "--resume", "--remove-source-files", very, srv.addr)
	if r.code != 2 || !strings.Contains(r.stderr, "is the server's directory itself") {
		t.Errorf("a move of the server's own file onto itself: %s\nwant exit 2 naming the shared directory", r)
	}
	sameContent(t, very, randomBytes(50000, 1))
	noProbesLeft(t, root)
	// send: the same file under another directory (a hard link), which
	// the probe cannot see: the server's listing gives its inode number.
	linked := filepath.Join(local, "very.bin")
	if err := os.Link(very, linked); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "--remove-source-files", "very.bin", srv.addr)
	sameContent(t, linked, randomBytes(50000, 1))
	if k := eventsNamed(parseEvents(t, r.stdout), "source_kept"); len(k) != 1 || !strings.Contains(k[0].Reason, "inode number") {
		t.Errorf("source_kept events %+v, want one naming the inode number:\n%s", k, r)
	}
	os.Remove(linked)
	// send: a copy of its own, found there whole, goes.
	put(filepath.Join(root, "copy.bin"), 2)
	put(filepath.Join(local, "copy.bin"), 2)
	mustRun(t, srv, local, nil, "send", "--resume", "--remove-source-files", "copy.bin", srv.addr)
	if _, err := os.Stat(filepath.Join(local, "copy.bin")); !os.IsNotExist(err) {
		t.Errorf("a copy found whole at a server elsewhere was not removed (%v)", err)
	}
	sameContent(t, filepath.Join(root, "copy.bin"), randomBytes(50000, 2))

	// get: the client fetches into the server's own tree: refused by
	// the probe.
	put(filepath.Join(root, "mine.bin"), 3)
	r = run(t, srv, root, nil, "get", "--resume", "--remove-source-files", target(srv.addr, "mine.bin"), ".")
	if r.code != 2 || !strings.Contains(r.stderr, "is the server's directory itself") {
		t.Errorf("a get of the server's file into its own directory: %s\nwant exit 2 naming the shared directory", r)
	}
	sameContent(t, filepath.Join(root, "mine.bin"), randomBytes(50000, 3))
	noProbesLeft(t, root)
	// get: into a hard link of it elsewhere: the client's inode number
	// tells the server.
	if err := os.Link(filepath.Join(root, "mine.bin"), filepath.Join(local, "mine.bin")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, srv, local, nil, "get", "--resume", "--remove-source-files", target(srv.addr, "mine.bin"), ".")
	sameContent(t, filepath.Join(root, "mine.bin"), randomBytes(50000, 3))
	waitLogLine(t, srv, "inode")
	// get: into a copy of its own, the server's file goes.
	put(filepath.Join(root, "theirs.bin"), 4)
	put(filepath.Join(local, "theirs.bin"), 4)
	mustRun(t, srv, local, nil, "get", "--resume", "--remove-source-files", target(srv.addr, "theirs.bin"), ".")
	waitFor(t, "the server to remove theirs.bin", func() bool {
		_, err := os.Stat(filepath.Join(root, "theirs.bin"))
		return os.IsNotExist(err)
	})
	sameContent(t, filepath.Join(local, "theirs.bin"), randomBytes(50000, 4))
}
