package control_test

import (
	"slices"
	"strings"
	"testing"

	"kerf/control"
)

// A client offers stop requests (";S") and blocks of zeros (";H"); a
// server agrees to each only when the client offered it, so that a
// kerf from before them (which sends neither) never gets a frame it
// would take for a protocol error (review 59 F3).
func TestServerEchoesOnlyWhatWasOffered(t *testing.T) {
	srv := startServerWith(t, t.TempDir(), nil)
	keys := func(ext string) []string {
		var k []string
		for _, f := range strings.Split(ext, ";") {
			if f != "" {
				k = append(k, f[:1])
			}
		}
		return k
	}
	client := control.ClientOffer(2)
	if k := keys(client); !slices.Contains(k, "S") || !slices.Contains(k, "H") {
		t.Fatalf("client offers %q; want S and H in it", client)
	}
	for _, tc := range []struct {
		ext  string
		want []string
		not  []string
	}{
		{client, []string{"S", "H"}, nil},
		{"N2", nil, []string{"S", "H"}},        // a kerf from before both
		{"N2;H", []string{"H"}, []string{"S"}}, // one from before stops
	} {
		got := keys(control.ServerOffer(srv, tc.ext))
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("offer %q: answer %v lacks %s", tc.ext, got, w)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("offer %q: answer %v has %s, not offered", tc.ext, got, n)
			}
		}
	}
}
