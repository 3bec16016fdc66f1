package main

import "testing"

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64 // 0: refused
	}{
		{"1024", 1024}, {"500k", 500 << 10}, {"500K", 500 << 10}, {"20M", 20 << 20}, {"20MB", 20 << 20},
		{"20MiB", 20 << 20}, {"20mib/s", 20 << 20}, {"20Mi", 20 << 20}, {"1t", 1 << 40}, {"1.5g", 3 << 29}, {" 2G ", 2 << 30}, {"1k", 1024},
		{"", 0}, {"k", 0}, {"fast", 0}, {"100", 0}, {"-5M", 0}, {"1e400", 0}, {"NaN", 0}, {"20Mbit", 0}, {"1kg", 0},
	} {
		got, err := parseRate(c.in)
		if c.want == 0 {
			if err == nil {
				t.Errorf("parseRate(%q) = %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}
