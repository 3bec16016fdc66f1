package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Argon2Params are the argon2id costs of a password hash. They are
// recorded in the hash (PHC string format), so changing the defaults
// never invalidates stored hashes.
type Argon2Params struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
}

// DefaultArgon2 follows the OWASP password storage recommendation for
// argon2id (19 MiB, 2 passes, 1 lane): a few tens of milliseconds per
// login on a server, yet a costly guess for an attacker.
var DefaultArgon2 = Argon2Params{Memory: 19 * 1024, Time: 2, Threads: 1}

// Hash prefixes of the three kinds of secret a user entry can hold.
const (
	prefixArgon2id = "$argon2id$"
	prefixToken    = "token-sha256:"
)

// ErrBadHash is returned for a stored hash kerf cannot read.
var ErrBadHash = errors.New("auth: unreadable password hash")

// HashPassword returns the argon2id hash of password, in PHC string form
// ($argon2id$v=19$m=...,t=...,p=...$salt$key).
func HashPassword(password string, p Argon2Params) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%sv=%d$m=%d,t=%d,p=%d$%s$%s", prefixArgon2id, argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// HashPasswordBcrypt returns a bcrypt hash of password at the default
// cost. bcrypt looks only at a password's first 72 bytes.
func HashPasswordBcrypt(password string) (string, error) {
	if len(password) > 72 {
		return "", errors.New("auth: bcrypt passwords are limited to 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	return string(h), nil
}

// NewToken returns a fresh random access token (32 bytes, URL-safe
// base64) and the form stored in the users file. A token is a
// machine-generated secret with full entropy, so a fast hash suffices.
func NewToken() (token, stored string) {
	b := make([]byte, 32)
	rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, hashToken(token)
}

func hashToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return prefixToken + hex.EncodeToString(sum[:])
}

// maxArgon2Memory bounds what a hash read from the users file may ask
// for (1 GiB), so a mistyped entry cannot exhaust the server's memory.
const maxArgon2Memory = 1 << 20

// MaxBcryptCost is the highest bcrypt cost a stored hash may have:
// 2^14 rounds, about a second on a slow core (the default is 10).
const MaxBcryptCost = 14

// verifySlots bounds concurrent password hashing: argon2id is made to be
// expensive, and many logins at once must not exhaust memory or CPU.
var verifySlots = make(chan struct{}, max(2, runtime.NumCPU()))

// Verify reports whether secret matches stored, which is an argon2id
// hash, a bcrypt hash or a token hash. The comparison takes the same
// time whatever prefix of the secret matches.
func Verify(stored, secret string) (bool, error) {
	switch {
	case strings.HasPrefix(stored, prefixToken):
		want := hashToken(secret)
		return subtle.ConstantTimeCompare([]byte(want), []byte(stored)) == 1, nil
	case strings.HasPrefix(stored, prefixArgon2id):
		p, salt, key, err := parseArgon2(stored)
		if err != nil {
			return false, err
		}
		verifySlots <- struct{}{}
		got := argon2.IDKey([]byte(secret), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
		<-verifySlots
		return subtle.ConstantTimeCompare(got, key) == 1, nil
	case strings.HasPrefix(stored, "$2a$") || strings.HasPrefix(stored, "$2b$") || strings.HasPrefix(stored, "$2y$"):
		// Bounded as argon2's parameters are: each step of the cost
		// doubles the work, and one hash of cost 31 held a hashing slot
		// for days, so that two logins stopped every password login
		// (QA).
		if c, err := bcrypt.Cost([]byte(stored)); err != nil || c > MaxBcryptCost {
			return false, fmt.Errorf("%w: bcrypt cost above %d", ErrBadHash, MaxBcryptCost)
		}
		verifySlots <- struct{}{}
		err := bcrypt.CompareHashAndPassword([]byte(stored), []byte(secret))
		<-verifySlots
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
			return false, nil
		default:
			return false, fmt.Errorf("%w: %v", ErrBadHash, err)
		}
	}
	return false, ErrBadHash
}

// CheckSecret reports why a stored secret (a users file's "secret") is
// none Verify can check: a plain password typed into the file, a hash
// cut short, parameters out of bounds. "" is fine (key login only).
func CheckSecret(stored string) error {
	switch {
	case stored == "":
		return nil
	case strings.HasPrefix(stored, prefixToken):
		if h := stored[len(prefixToken):]; len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return fmt.Errorf("%w: a token hash is %s and 64 hex digits", ErrBadHash, prefixToken)
		}
		return nil
	case strings.HasPrefix(stored, prefixArgon2id):
		_, _, _, err := parseArgon2(stored)
		return err
	case strings.HasPrefix(stored, "$2a$") || strings.HasPrefix(stored, "$2b$") || strings.HasPrefix(stored, "$2y$"):
		c, err := bcrypt.Cost([]byte(stored))
		if err != nil || len(stored) != 60 {
			return fmt.Errorf("%w: not a whole bcrypt hash", ErrBadHash)
		}
		if c > MaxBcryptCost {
			return fmt.Errorf("%w: bcrypt cost above %d", ErrBadHash, MaxBcryptCost)
		}
		return nil
	}
	return fmt.Errorf("%w: not an argon2id, bcrypt or token hash (set passwords with kerf user passwd)", ErrBadHash)
}

func parseArgon2(s string) (p Argon2Params, salt, key []byte, err error) {
	// $argon2id$v=19$m=65536,t=3,p=4$salt$key
	f := strings.Split(s, "$")
	if len(f) != 6 || f[1] != "argon2id" {
		return p, nil, nil, ErrBadHash
	}
	var v int
	if _, err := fmt.Sscanf(f[2], "v=%d", &v); err != nil || v != argon2.Version {
		return p, nil, nil, fmt.Errorf("%w: argon2 version %q", ErrBadHash, f[2])
	}
	if _, err := fmt.Sscanf(f[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return p, nil, nil, fmt.Errorf("%w: argon2 parameters %q", ErrBadHash, f[3])
	}
	if p.Memory < 8*uint32(p.Threads) || p.Memory > maxArgon2Memory || p.Time < 1 || p.Time > 64 || p.Threads < 1 {
		return p, nil, nil, fmt.Errorf("%w: argon2 parameters %q out of range", ErrBadHash, f[3])
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(f[4]); err != nil || len(salt) < 8 {
		return p, nil, nil, fmt.Errorf("%w: argon2 salt", ErrBadHash)
	}
	if key, err = b64.DecodeString(f[5]); err != nil || len(key) < 16 || len(key) > 64 {
		return p, nil, nil, fmt.Errorf("%w: argon2 key", ErrBadHash)
	}
	return p, salt, key, nil
}

// dummyHash is verified against when the user does not exist, so that an
// unknown name costs as much time as a wrong password.
var dummyHash = sync.OnceValue(func() string { return HashPassword("kerf-no-such-user", DefaultArgon2) })

// dummyVerifies counts verifyDummy's calls, for tests (time is not
// measured in tests).
var dummyVerifies atomic.Int64

// verifyDummy spends on password what checking a real password hash
// costs, for a login that fails without one.
func verifyDummy(password string) {
	dummyVerifies.Add(1)
	Verify(dummyHash(), password)
}
