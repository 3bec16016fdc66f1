package framing

import (
	"errors"
	"testing"
)

func TestKeptRangeVectors(t *testing.T) {
	for _, c := range []struct {
		r    KeptRange
		wire string
	}{
		{KeptRange{Off: 0x100000, End: 0x200000, CRC: 0xe3069283}, "k6100000-200000:e3069283"},
		{KeptRange{Off: 0, End: 1, CRC: 0}, "k%0-1:0"},
		{KeptRange{Off: 1<<63 - 2, End: 1<<63 - 1, CRC: 0xffffffff}, "kJ7ffffffffffffffe-7fffffffffffffff:ffffffff"},
	} {
		got := string(AppendKeptRange(nil, c.r))
		if got != c.wire {
			t.Errorf("AppendKeptRange(%+v) = %q, want %q", c.r, got, c.wire)
		}
		if len(got) > KeptRangeLen {
			t.Errorf("%q is longer than KeptRangeLen %d", got, KeptRangeLen)
		}
		r, err := ParseKeptRange([]byte(c.wire[2:]))
		if err != nil || r != c.r {
			t.Errorf("ParseKeptRange(%q) = %+v, %v; want %+v", c.wire[2:], r, err, c.r)
		}
	}
}

func TestParseKeptRangeRefuses(t *testing.T) {
	for _, v := range []string{
		"", "10-20", "10:20", "-20:0", "10-:0", "10-20:", "20-10:0", "10-10:0",
		"10-20:100000000",       // CRC past 32 bits
		"10-8000000000000000:0", // end past int64
		"10-20:0:0", "10-20-30:0", "1x-20:0", "+10-20:0", "10 -20:0",
		"00000000000000001-2:0", // 17 digits
	} {
		if r, err := ParseKeptRange([]byte(v)); !errors.Is(err, ErrBadKeptRange) {
			t.Errorf("ParseKeptRange(%q) = %+v, %v; want ErrBadKeptRange", v, r, err)
		}
	}
}

func FuzzParseKeptRange(f *testing.F) {
	for _, s := range []string{"100000-200000:e3069283", "0-1:0", "7ffffffffffffffe-7fffffffffffffff:ffffffff", "A-b:C", "10-10:0", "-:"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := ParseKeptRange(v)
		if err != nil {
			if !errors.Is(err, ErrBadKeptRange) {
				t.Fatalf("ParseKeptRange(%q): %v does not wrap ErrBadKeptRange", v, err)
			}
			return
		}
		if r.Off < 0 || r.End <= r.Off {
			t.Fatalf("ParseKeptRange(%q) = %+v", v, r)
		}
		w := AppendKeptRange(nil, r)
		if int(w[1])-32 != len(w)-2 {
			t.Fatalf("AppendKeptRange(%+v) = %q: bad count", r, w)
		}
		r2, err := ParseKeptRange(w[2:])
		if err != nil || r2 != r {
			t.Fatalf("ParseKeptRange(%q) = %+v; AppendKeptRange %q; ParseKeptRange %+v, %v", v, r, w, r2, err)
		}
	})
}
