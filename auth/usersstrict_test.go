package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A users file is read strictly: a misspelt field, a user listed twice,
// another version or no object at all is an error naming the problem,
// not a user with other rights than meant (QA: "readonly" for
// read_only left the user writable).
func TestUsersFileStrict(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"misspelt field", `{"version":1,"users":[{"name":"bob","secret":"","keys":[],"readonly":true}]}`, `unknown field "readonly"`},
		{"listed twice", `{"version":1,"users":[{"name":"bob","secret":"","read_only":true},{"name":"bob","secret":""}]}`, "listed twice"},
		{"version 2", `{"version":2,"users":[]}`, "version 2"},
		{"null", `null`, "version 0"},
		{"empty object", `{}`, "version 0"},
		{"type", "{\"version\":1,\n\"users\":[{\"name\":\"bob\",\"secret\":\"\",\"read_only\":\"yes\"}]}", "line 2"},
		{"syntax", "{\"version\":1,\n\"users\":[,]}", "line 2"},
		{"cut short", "{\"version\":1,\n\"users\":[", "ends before its JSON does"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), UsersFileName)
			os.WriteFile(p, []byte(tc.text), 0o600)
			_, err := OpenUsers(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("OpenUsers: %v; want an error saying %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "Go struct") {
				t.Errorf("the error speaks Go: %v", err)
			}
		})
	}
	p := filepath.Join(t.TempDir(), UsersFileName)
	os.WriteFile(p, []byte(`{"version":1,"users":[{"name":"bob","secret":"","keys":["sha256:`+strings.Repeat("ab", 32)+`"],"read_only":true}]}`), 0o600)
	if _, err := OpenUsers(p); err != nil {
		t.Errorf("a good file: %v", err)
	}
}
