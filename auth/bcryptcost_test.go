package auth

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// A bcrypt hash of a cost above MaxBcryptCost is a bad hash, refused
// before any hashing (one of cost 31 held a hashing slot for days);
// one at the bound is checked.
func TestBcryptCostBounded(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	high := strings.Replace(string(h), "$04$", "$31$", 1)
	if ok, err := Verify(high, "pw"); ok || !errors.Is(err, ErrBadHash) {
		t.Errorf("cost 31: %v, %v; want a bad hash", ok, err)
	}
	over := strings.Replace(string(h), "$04$", "$15$", 1)
	if ok, err := Verify(over, "pw"); ok || !errors.Is(err, ErrBadHash) {
		t.Errorf("cost 15: %v, %v; want a bad hash", ok, err)
	}
	if ok, err := Verify(string(h), "pw"); !ok || err != nil {
		t.Errorf("cost 4: %v, %v; want a match", ok, err)
	}
}
