package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The races these tests look for are between processes (two `kerf serve`
// on one new state directory, two clients pinning at once), which a
// mutex inside one process would hide, so the test binary re-executes
// itself as the racers.

const (
	racerEnv     = "KERF_AUTH_RACER" // what the racer does
	racerPathEnv = "KERF_AUTH_RACER_PATH"
	racerIDEnv   = "KERF_AUTH_RACER_ID"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(racerEnv); role != "" {
		os.Exit(racer(role, os.Getenv(racerPathEnv), os.Getenv(racerIDEnv)))
	}
	os.Exit(m.Run())
}

// racer is one racing process: it says it is ready, waits for its
// standard input to close (the starting gun), does its one operation
// and prints the result.
func racer(role, path, id string) int {
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	var err error
	switch role {
	case "server", "client":
		load := LoadOrCreateIdentity
		if role == "client" {
			load = LoadOrCreateClientIdentity
		}
		var got *Identity
		var created bool
		if got, created, err = load(path); err == nil {
			fmt.Println(got.Fingerprint, created)
		}
	case "knownhosts":
		k := &KnownHosts{Path: path, AcceptNew: true}
		err = k.Check(racerHost(id), racerFingerprint(id))
	case "users":
		var u *UsersFile
		if u, err = OpenUsers(path); err == nil {
			err = u.Add(User{Name: "u" + id, Keys: []string{racerFingerprint(id)}})
		}
	default:
		err = fmt.Errorf("unknown racer %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func racerHost(id string) string { return "host" + id + ":1649" }

func racerFingerprint(id string) string {
	sum := sha256.Sum256([]byte(id))
	return FingerprintPrefix + hex.EncodeToString(sum[:])
}

// race runs n racers of one role on path at once and returns what each
// printed after "ready". A racer that fails fails the test.
func race(t *testing.T, n int, role, path string) []string {
	t.Helper()
	type proc struct {
		cmd    *exec.Cmd
		gate   io.WriteCloser
		out    *bufio.Reader
		stderr bytes.Buffer
	}
	procs := make([]*proc, n)
	for i := range procs {
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^$")}
		p.cmd.Env = append(os.Environ(), racerEnv+"="+role, racerPathEnv+"="+path, racerIDEnv+"="+strconv.Itoa(i),
			// Under -race a process otherwise sleeps a second at exit.
			"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		p.cmd.Stderr = &p.stderr
		var err error
		if p.gate, err = p.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p.out = bufio.NewReader(stdout)
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
	}
	// Start them together only once all are running, so they overlap.
	for _, p := range procs {
		if l, err := p.out.ReadString('\n'); l != "ready\n" {
			t.Fatalf("racer said %q, %v (stderr %q)", l, err, p.stderr.String())
		}
	}
	for _, p := range procs {
		p.gate.Close()
	}
	res := make([]string, n)
	for i, p := range procs {
		b, _ := io.ReadAll(p.out)
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("racer %d: %v: %s", i, err, strings.TrimSpace(p.stderr.String()))
		}
		res[i] = strings.TrimSpace(string(b))
	}
	return res
}

func raceRounds() int {
	if testing.Short() {
		return 5
	}
	return 25
}

const racers = 6

// TestIdentityCreationRace starts several processes on one new state
// (or identity) directory at once, many times: every one must succeed
// and end with the same key, exactly one must have made it, and it must
// be the key on disk, whose certificate matches it.
func TestIdentityCreationRace(t *testing.T) {
	for _, role := range []string{"server", "client"} {
		t.Run(role, func(t *testing.T) {
			for round := range raceRounds() {
				dir := filepath.Join(t.TempDir(), "state")
				res := race(t, racers, role, dir)
				fps, creators := map[string]bool{}, 0
				for _, r := range res {
					fp, created, _ := strings.Cut(r, " ")
					fps[fp] = true
					if created == "true" {
						creators++
					}
				}
				// On disk, the pair as kerf loads it, and as --cert/--key
				// (or another program) reads the two files.
				onDisk, err := LoadClientIdentity(dir)
				if err != nil {
					t.Fatalf("round %d: loading what is on disk: %v", round, err)
				}
				files, err := LoadIdentity(filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName))
				if err != nil {
					t.Fatalf("round %d: cert.pem and key.pem: %v", round, err)
				}
				if len(fps) != 1 || !fps[onDisk.Fingerprint] || files.Fingerprint != onDisk.Fingerprint || creators != 1 {
					t.Fatalf("round %d: racers got %q (%d made a key); on disk %s, cert.pem %s",
						round, res, creators, onDisk.Fingerprint, files.Fingerprint)
				}
				// The losers' temporary files are gone.
				if ents, _ := os.ReadDir(dir); len(ents) != 2 {
					t.Fatalf("round %d: state directory holds %v", round, ents)
				}
			}
		})
	}
}

// TestKnownHostsPinRace has several clients pin different servers in one
// known_hosts at once: no pin may be lost, and the file's other lines
// stay.
func TestKnownHostsPinRace(t *testing.T) {
	for round := range raceRounds() {
		p := filepath.Join(t.TempDir(), KnownHostsFileName)
		if err := os.WriteFile(p, []byte("# mine\nold:1 "+racerFingerprint("old")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		race(t, racers, "knownhosts", p)
		k := &KnownHosts{Path: p}
		for i := range racers {
			id := strconv.Itoa(i)
			if fp, ok, err := k.Lookup(racerHost(id)); err != nil || !ok || fp != racerFingerprint(id) {
				b, _ := os.ReadFile(p)
				t.Fatalf("round %d: pin of %s: %q %v %v; file:\n%s", round, racerHost(id), fp, ok, err, b)
			}
		}
		if fp, ok, _ := k.Lookup("old:1"); !ok || fp != racerFingerprint("old") {
			t.Fatalf("round %d: the earlier pin was lost", round)
		}
		if b, _ := os.ReadFile(p); !strings.HasPrefix(string(b), "# mine\n") {
			t.Fatalf("round %d: the comment was lost:\n%s", round, b)
		}
	}
}

// TestUsersFileAddRace has several `kerf user add` at once on one users
// file: every user must be there afterwards.
func TestUsersFileAddRace(t *testing.T) {
	for round := range raceRounds() {
		p := filepath.Join(t.TempDir(), UsersFileName)
		race(t, racers, "users", p)
		u, err := OpenUsers(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := u.List(); err != nil || len(got) != racers {
			t.Fatalf("round %d: %d users after %d adds: %v %v", round, len(got), racers, got, err)
		}
	}
}

// A pin another client writes while this one asks its user is not
// overwritten: the policy is applied again to what the file then holds.
func TestKnownHostsPinnedWhileAsking(t *testing.T) {
	p := filepath.Join(t.TempDir(), KnownHostsFileName)
	other := &KnownHosts{Path: p, AcceptNew: true}
	k := &KnownHosts{Path: p, Ask: func(addr, _ string) bool {
		if err := other.Check(addr, racerFingerprint("other")); err != nil {
			t.Error(err)
		}
		return true
	}}
	if err := k.Check("h:1", racerFingerprint("mine")); !errors.Is(err, ErrHostKeyChanged) {
		t.Errorf("pinning over a pin made meanwhile: %v, want ErrHostKeyChanged", err)
	}
	if fp, _, _ := other.Lookup("h:1"); fp != racerFingerprint("other") {
		t.Errorf("pin %s, want the other client's", fp)
	}
}
