package main

import "testing"

func TestParseListing(t *testing.T) {
	kerf := "drwxr-xr-x         4096 2024-05-06 07:08:09 sub dir/\n" +
		"-rw-r--r--            6 2024-05-06 07:08:10 a b.txt\n" +
		"Lrwxrwxrwx           11 2024-05-06 07:08:11 link\n" +
		"prw-r--r--            0 2024-05-06 07:08:12 fifo\n"
	ents, ok := parseListing("p", kerf)
	if !ok || len(ents) != 4 {
		t.Fatalf("parseListing: %v %+v", ok, ents)
	}
	want := []jsonEntry{
		{"entry", "p", "sub dir", "dir", "drwxr-xr-x", 4096, "2024-05-06T07:08:09Z"},
		{"entry", "p", "a b.txt", "file", "-rw-r--r--", 6, "2024-05-06T07:08:10Z"},
		{"entry", "p", "link", "symlink", "Lrwxrwxrwx", 11, "2024-05-06T07:08:11Z"},
		{"entry", "p", "fifo", "other", "prw-r--r--", 0, "2024-05-06T07:08:12Z"},
	}
	for i := range want {
		if ents[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, ents[i], want[i])
		}
	}
	if ents, ok := parseListing("", ""); !ok || len(ents) != 0 {
		t.Errorf("empty listing: %v %+v", ok, ents)
	}
	// Not kerf's form (C-Kermit's), or a name with a newline: no entries.
	for _, text := range []string{
		" -rw-r--r--      6 2024-05-06 07:08:10 a.txt\n",
		kerf + "forged continuation\n",
	} {
		if ents, ok := parseListing("", text); ok || ents != nil {
			t.Errorf("parseListing(%q) = %+v, %v; want not ok", text, ents, ok)
		}
	}
}
