package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// --modify-window, as rsync's: where one side keeps times in FAT's 2 s
// steps, a resume passes over the files it has whole only with a window
// (without one each file whose time is an odd second, or has a
// fraction, is sent again). Both directions; the destination's coarse
// times are made by hand (a FAT mount needs FUSE, filestore's tests).
func TestResumeModifyWindow(t *testing.T) {
	root, local, back := t.TempDir(), t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	const n = 6
	base := time.Date(2021, 3, 4, 5, 6, 7, 700_000_000, time.UTC) // an odd second and a fraction
	names := make([]string, n)
	for i := range n {
		names[i] = filepath.Join("tree", fmt.Sprintf("f%d", i))
		p := filepath.Join(local, names[i])
		writeFile(t, p, randomBytes(3000+i, uint64(i)))
		mt := base.Add(time.Duration(2*i) * time.Second)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	// FAT's times: the even second at or before.
	fatTimes := func(dir string) {
		t.Helper()
		for i := range n {
			mt := base.Add(time.Duration(2*i) * time.Second)
			fat := time.Unix(mt.Unix()&^1, 0)
			if err := os.Chtimes(filepath.Join(dir, names[i]), fat, fat); err != nil {
				t.Fatal(err)
			}
		}
	}
	skipped := func(r result) int { return len(eventsNamed(parseEvents(t, r.stdout), "file_skipped")) }

	mustRun(t, srv, local, nil, "send", "-r", "tree", srv.addr)
	fatTimes(root)
	if r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "-r", "tree", srv.addr); skipped(r) != 0 {
		t.Fatalf("send --resume without a window: %d skipped, want none (times 1.7 s apart):\n%s", skipped(r), r.stdout)
	}
	fatTimes(root)
	if r := mustRun(t, srv, local, []string{"--json"}, "send", "--resume", "--modify-window", "2", "-r", "tree", srv.addr); skipped(r) != n {
		t.Fatalf("send --resume --modify-window 2: %d skipped, want %d:\n%s", skipped(r), n, r.stdout)
	}

	// The server's files get their exact times back (the resume with a
	// window passed them over), and this side's are FAT's.
	for i := range n {
		mt := base.Add(time.Duration(2*i) * time.Second)
		if err := os.Chtimes(filepath.Join(root, names[i]), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, srv, back, nil, "get", "-r", target(srv.addr, "tree"), ".")
	fatTimes(back)
	if r := mustRun(t, srv, back, []string{"--json"}, "get", "--resume", "--modify-window", "1s", "-r", target(srv.addr, "tree"), "."); skipped(r) != 0 {
		t.Fatalf("get --resume --modify-window 1s: %d skipped, want none (1.7 s apart):\n%s", skipped(r), r.stdout)
	}
	fatTimes(back)
	if r := mustRun(t, srv, back, []string{"--json"}, "get", "--resume", "--modify-window", "2s", "-r", target(srv.addr, "tree"), "."); skipped(r) != n {
		t.Fatalf("get --resume --modify-window 2s: %d skipped, want %d:\n%s", skipped(r), n, r.stdout)
	}
	for _, name := range names {
		sameFile(t, filepath.Join(local, name), filepath.Join(back, name))
	}
}
