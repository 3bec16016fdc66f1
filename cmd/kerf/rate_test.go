package main

import "testing"

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64 // -1: refused
	}{
		{"0", 0}, {"0k", 0}, {"0.0M", 0}, // no limit
		{"1024", 1024}, {"500k", 500 << 10}, {"500K", 500 << 10}, {"20M", 20 << 20}, {"20MB", 20 << 20},
		{"20MiB", 20 << 20}, {"20mib/s", 20 << 20}, {"20Mi", 20 << 20}, {"1t", 1 << 40}, {"1.5g", 3 << 29}, {" 2G ", 2 << 30}, {"1k", 1024},
		{"", -1}, {"k", -1}, {"fast", -1}, {"100", -1}, {"-5M", -1}, {"1e400", -1}, {"NaN", -1}, {"20Mbit", -1}, {"1kg", -1}, {"-0.5k", -1},
	} {
		got, err := parseRate(c.in)
		if c.want < 0 {
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
