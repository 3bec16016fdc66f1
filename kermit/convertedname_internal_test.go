package kermit

import "testing"

func TestConvertedName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"DATA.BIN", "data.bin"},
		{"README", "readme"},
		{"Data.bin", "Data.bin"},
		{"data.bin", "data.bin"},
		{"123.456", "123.456"},
		{"ÉTÉ.TXT", "été.txt"},
		{"DIR/SUB/F.C", "dir/sub/f.c"},
		{"MIXED.c", "MIXED.c"},
		{"", ""},
	} {
		if got := convertedName(tc.in); got != tc.want {
			t.Errorf("convertedName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
