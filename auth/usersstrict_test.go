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
		// Whose entry and which line (QA ag: only the field was named).
		{"misspelt field's line and user", "{\"version\":1,\"users\":[\n{\"name\":\"amy\",\"secret\":\"\"},\n{\"name\":\"bob\",\n\"secret\":\"\",\n\"readonly\":true}]}", `line 5, user bob: unknown field "readonly"`},
		{"unknown field at the top", "{\"version\":1,\n\"user\":[]}", `line 2: unknown field "user"`},
		{"type's user", "{\"version\":1,\"users\":[\n{\"name\":\"bob\",\"secret\":\"\",\n\"read_only\":\"yes\"}]}", `line 3, user bob: "read_only" must be a boolean`},
		{"twice, the second's line", "{\"version\":1,\"users\":[\n{\"name\":\"bob\",\"secret\":\"\"},\n{\"name\":\"bob\",\"secret\":\"\"}]}", `line 3, user bob: the user is listed twice`},
		{"relative root's line", "{\"version\":1,\"users\":[\n{\"name\":\"amy\",\"secret\":\"\"},\n{\"name\":\"bob\",\"secret\":\"\",\"root\":\"srv\"}]}", `line 3, user bob: root "srv" is not an absolute path`},
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
