package kermit

import "testing"

func TestConvertedName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"DATA.BIN", "data.bin"},
		{"README", "readme"},
		{"Data.bin", "Data.bin"},
		{"data.bin", "data.bin"},
		{"123.456", "123.456"},
		{"ÉTÉ.TXT", "ÉtÉ.txt"},         // only ASCII letters change, as in C-Kermit's C locale
		{"CAF\xc9.TXT", "caf\xc9.txt"}, // a Latin-1 name keeps its bytes
		{"CAF\xc8.TXT", "caf\xc8.txt"},
		{"DIR/SUB/F.C", "dir/sub/f.c"},
		{"MIXED.c", "MIXED.c"},
		{"", ""},
	} {
		if got := convertedName(tc.in); got != tc.want {
			t.Errorf("convertedName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
