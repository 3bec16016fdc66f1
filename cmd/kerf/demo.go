package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"kerf/auth"
	"kerf/control"
	"kerf/datachan"
	"kerf/filestore"
)

// demoCommand runs a real transfer on this machine: a server on
// loopback, a sample tree sent to it and fetched back, both verified.
func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "start a server on loopback, send a sample tree to it, fetch it back, verify, print throughput",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "mb", Value: 256, Usage: "size of the large sample file in MiB"},
			&cli.IntFlag{Name: "small", Value: 500, Usage: "number of small (16 KiB) sample files"},
			// As send's, so that the demo's speed is a default send's
			// (QA ag: it used 1 where send's default is auto).
			&cli.StringFlag{Name: "streams", Value: "auto", DefaultText: "auto", Usage: fmt.Sprintf("data connections, 1-%d (auto: as send's, 1 to this host's own addresses)", datachan.MaxStreams)},
		},
		Action: func(c *cli.Context) error {
			streams, err := streamsFlag(c)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return usageErr("demo takes no arguments")
			}
			if c.Int("mb") < 0 || c.Int("small") < 0 {
				return usageErr("--mb and --small must not be negative")
			}
			work, err := os.MkdirTemp("", "kerf-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			src := filepath.Join(work, "sample")
			srvRoot := filepath.Join(work, "server")
			back := filepath.Join(work, "back")
			if err := os.Mkdir(srvRoot, 0o755); err != nil { // a server makes no missing root
				return err
			}
			total, err := makeSample(src, c.Int("mb"), c.Int("small"))
			if err != nil {
				return err
			}
			fmt.Printf("sample tree: %s in %s under %s (removed when the demo ends)\n", humanBytes(total), plural(c.Int("small")+1, "file"), src)

			ctx, cancel := context.WithCancel(c.Context)
			defer cancel()
			// The real secure path: a throwaway state (key, self-signed
			// certificate, users file) and a demo user with a random
			// password, TLS 1.3 on the control and data connections.
			state := filepath.Join(work, "state")
			id, _, err := auth.LoadOrCreateIdentity(state)
			if err != nil {
				return err
			}
			users, err := auth.OpenUsers(filepath.Join(state, auth.UsersFileName))
			if err != nil {
				return err
			}
			pw, _ := auth.NewToken()
			if err := users.Add(auth.User{Name: "demo", Secret: auth.HashPassword(pw, auth.DefaultArgon2), Root: srvRoot}); err != nil {
				return err
			}
			srv, err := control.NewServer(control.ServerConfig{Root: srvRoot, Addr: "127.0.0.1:0", Identity: id, Users: users})
			if err != nil {
				return connectErr(err)
			}
			go srv.Serve(ctx)
			defer srv.Close()
			fmt.Printf("server on %s (data %s), key %s\n", srv.Addr(), srv.DataAddr(), id.Fingerprint)

			known := &auth.KnownHosts{Path: filepath.Join(work, auth.KnownHostsFileName), AcceptNew: true}
			cl, err := control.Dial(ctx, control.ClientConfig{Addr: srv.Addr().String(), Streams: streams,
				User: "demo", Password: pw, VerifyHost: known.Check})
			if err != nil {
				return connectErr(err)
			}
			defer cl.Close()
			files, _, _, err := localFiles([]string{src}, true, nil)
			if err != nil {
				return err
			}
			t0 := time.Now()
			if err := cl.Send(ctx, files); err != nil {
				return transferErr(fmt.Errorf("send: %w", err))
			}
			dSend := time.Since(t0)
			mode := "dual-channel, TLS 1.3"
			switch {
			case !cl.Dual():
				mode = "classic"
			case !cl.DataEncrypted():
				mode = "dual-channel, plaintext data"
			}
			fmt.Printf("send (%s): %s in %.2fs = %s\n", mode, humanBytes(total), dSend.Seconds(), humanRate(float64(total)/dSend.Seconds()))

			store, err := filestore.Open(back)
			if err != nil {
				return err
			}
			defer store.Close()
			store.UnnamedMax = filestore.NetUnnamedMax
			t0 = time.Now()
			if err := cl.Get(ctx, "sample", true, store); err != nil {
				return transferErr(fmt.Errorf("get: %w", err))
			}
			dGet := time.Since(t0)
			fmt.Printf("get:  %s in %.2fs = %s\n", humanBytes(total), dGet.Seconds(), humanRate(float64(total)/dGet.Seconds()))

			for _, dir := range []string{filepath.Join(srvRoot, "sample"), filepath.Join(back, "sample")} {
				if err := sameTree(src, dir); err != nil {
					return transferErr(fmt.Errorf("verify: %w", err))
				}
			}
			fmt.Println("verified: server copy and fetched copy are byte-identical to the sample")
			return nil
		},
	}
}

func makeSample(dir string, mb, small int) (int64, error) {
	if err := os.MkdirAll(filepath.Join(dir, "small"), 0o755); err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewSource(1))
	buf := make([]byte, 1<<20)
	f, err := os.Create(filepath.Join(dir, "large.bin"))
	if err != nil {
		return 0, err
	}
	for i := 0; i < mb; i++ {
		rng.Read(buf)
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	total := int64(mb) << 20
	for i := 0; i < small; i++ {
		rng.Read(buf[:16<<10])
		if err := os.WriteFile(filepath.Join(dir, "small", fmt.Sprintf("file %04d.dat", i)), buf[:16<<10], 0o644); err != nil {
			return 0, err
		}
		total += 16 << 10
	}
	return total, nil
}

// sameTree checks that every file under a exists under b with equal bytes.
func sameTree(a, b string) error {
	return filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(x, y) {
			return fmt.Errorf("%s differs", filepath.Join(b, rel))
		}
		return nil
	})
}
