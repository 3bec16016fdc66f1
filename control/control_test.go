package control_test

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kerf/control"
	"kerf/filestore"
	"kerf/kermit"
)

func startServer(t *testing.T, root string) *control.Server {
	t.Helper()
	return startServerWith(t, root, nil)
}

func files(t *testing.T, dir string, specs map[string][]byte) []kermit.OutgoingFile {
	t.Helper()
	var out []kermit.OutgoingFile
	for name, data := range specs {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		out = append(out, kermit.OutgoingFile{Name: name, Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode().Perm(),
			Open: func() (kermit.FileReader, error) { return os.Open(p) }})
	}
	return out
}

func rnd(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestDualChannelSendGet(t *testing.T) {
	for _, streams := range []int{1, 3} {
		root, src, back := t.TempDir(), t.TempDir(), t.TempDir()
		srv := startServer(t, root)
		specs := map[string][]byte{
			"big.bin":              rnd(5<<20+123, 1),
			"empty":                nil,
			"dir/ünïcode ñame.txt": []byte("utf-8 name\n"),
			"dir/sub/x.bin":        rnd(1000, 2),
		}
		out := files(t, src, specs)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cl, err := control.Dial(ctx, clientConfig(srv, func(c *control.ClientConfig) { c.Streams = streams }))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Send(ctx, out); err != nil {
			t.Fatalf("send: %v", err)
		}
		if !cl.Dual() {
			t.Fatal("kerf client and server did not agree on the dual-channel extension")
		}
		for name, data := range specs {
			got, err := os.ReadFile(filepath.Join(root, name))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("server copy of %s: %v (len %d want %d)", name, err, len(got), len(data))
			}
		}
		st := cl.Session().DataPath()
		if st == nil {
			t.Fatal("no data path")
		}
		store, _ := filestore.Open(back)
		if err := cl.Get(ctx, "dir", true, store); err != nil {
			t.Fatalf("get -r: %v", err)
		}
		if err := cl.Get(ctx, "big.bin", false, store); err != nil {
			t.Fatalf("get: %v", err)
		}
		for _, name := range []string{"big.bin", "dir/ünïcode ñame.txt", "dir/sub/x.bin"} {
			got, err := os.ReadFile(filepath.Join(back, name))
			if err != nil || !bytes.Equal(got, specs[name]) {
				t.Errorf("fetched %s: %v", name, err)
			}
		}
		list, err := cl.Generic(ctx, 'D', "dir")
		if err != nil || !strings.Contains(list, "ünïcode ñame.txt") {
			t.Errorf("ls: %q %v", list, err)
		}
		cl.Close()
	}
}

func TestManySmallFiles(t *testing.T) {
	root, src := t.TempDir(), t.TempDir()
	srv := startServer(t, root)
	specs := map[string][]byte{}
	for i := 0; i < 2000; i++ {
		specs[filepath.ToSlash(filepath.Join("tree", string(rune('a'+i%26)), "f"+string(rune('0'+i%10))+"-"+itoa(i)))] = rnd(i%700, int64(i))
	}
	out := files(t, src, specs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := control.Dial(ctx, clientConfig(srv, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, out); err != nil {
		t.Fatalf("send: %v", err)
	}
	for name, data := range specs {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}
