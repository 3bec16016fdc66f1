package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// Names holding "} " cannot be brace-quoted among others: a get of
// several such names asks for each alone, and fetches exactly them.
// (Regression, QA: `get 'h/br2/a} {b' 'h/br2/{x}' multi/` went as one
// filespec "{br2/a} {b} br2/{x}", which the server split as br2/a, b
// and br2/{x}: br2/a and the top directory's b came back, exit 0.)
func TestGetNamesThatCannotBeQuoted(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	srv := startServer(t, root, serverOpts{})
	writeFile(t, filepath.Join(root, "b"), []byte("top b, not asked for"))
	writeFile(t, filepath.Join(root, "br2", "a"), []byte("br2/a, not asked for"))
	want := map[string][]byte{"a} {b": randomBytes(2000, 1), "{x}": randomBytes(3000, 2), "x} y": randomBytes(100, 3)}
	for n, b := range want {
		writeFile(t, filepath.Join(root, "br2", n), b)
	}
	args := []string{target(srv.addr, "br2/a} {b"), target(srv.addr, "br2/{x}"), target(srv.addr, "br2/x} y"), "multi/"}
	if r := run(t, srv, local, nil, "get", args...); r.code != 0 {
		t.Fatalf("get: %s", r)
	}
	ents, err := os.ReadDir(filepath.Join(local, "multi"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(want) {
		t.Fatalf("fetched %q, want the %d names asked for", got, len(want))
	}
	for n := range want {
		sameFile(t, filepath.Join(root, "br2", n), filepath.Join(local, "multi", n))
	}

	// send --resume's listing of what is there finds such a name whole,
	// and does not send it again.
	up := filepath.Join(local, "up")
	writeFile(t, filepath.Join(up, "a} {b"), randomBytes(5000, 4))
	writeFile(t, filepath.Join(up, "c"), randomBytes(5000, 5))
	if r := run(t, srv, up, nil, "send", "a} {b", "c", target(srv.addr, "sent/")); r.code != 0 {
		t.Fatalf("send: %s", r)
	}
	r := run(t, srv, up, []string{"--json"}, "send", "--resume", "a} {b", "c", target(srv.addr, "sent/"))
	if r.code != 0 {
		t.Fatalf("send --resume: %s", r)
	}
	evs := parseEvents(t, r.stdout)
	if done := eventsNamed(evs, "file_done"); len(done) != 0 {
		t.Errorf("send --resume sent %q again: %s", done[0].Name, r.stdout)
	}
	if skipped := eventsNamed(evs, "file_skipped"); len(skipped) != 2 {
		t.Errorf("send --resume found %d files there, want 2: %s", len(skipped), r.stdout)
	}
}
