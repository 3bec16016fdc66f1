package kermit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kerf/filestore"
	"kerf/kermit"
)

// accountlessFS is a server tree whose session says it has no account
// of its own (anonymous), or has one.
type accountlessFS struct {
	*filestore.Dir
	accountless bool
}

func (a accountlessFS) Accountless() bool { return a.accountless }

// A server session says, at its S, whose its skip list is: with the
// anonymous sessions' bound full, an anonymous session's kerf-skip text
// is not taken (its GET sends every file) and a user's is (its files
// are left out; QA ah).
func TestAccountlessSessionsSkipBound(t *testing.T) {
	defer kermit.FillAccountlessSkip()()
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "t"), 0o755)
	for i := range 5 {
		os.WriteFile(filepath.Join(root, "t", fmt.Sprint(i)), []byte(fmt.Sprint("data ", i)), 0o644)
	}
	for _, accountless := range []bool{false, true} {
		t.Run(fmt.Sprintf("accountless=%v", accountless), func(t *testing.T) {
			dir, err := filestore.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer dir.Close()
			var got fileEndings
			ccfg := kermit.DefaultConfig()
			ccfg.Events = got.note
			cli, srv := dualSessions(t, ccfg, kermit.DefaultConfig(), nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			go srv.Serve(ctx, accountlessFS{dir, accountless})
			list, err := cli.GetListing(ctx, "t", true)
			if err != nil || len(list) != 5 {
				t.Fatalf("GetListing: %d, %v", len(list), err)
			}
			st, err := filestore.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := cli.GetWith(ctx, "t", kermit.GetOptions{Recursive: true, Resume: true, Skip: list}, st); err != nil {
				t.Fatal(err)
			}
			skipped := 0
			for i := range 5 {
				if got.of(fmt.Sprintf("t/%d", i)).Kind == kermit.FileSkipped {
					skipped++
				}
			}
			if want := map[bool]int{false: 5, true: 0}[accountless]; skipped != want {
				t.Errorf("%d of 5 files left out, want %d", skipped, want)
			}
		})
	}
}
