package kermit

import (
	"bytes"
	"strings"
	"testing"
)

// consume counts the file's bytes of what it takes, whatever the cut:
// the CRs text mode adds before each LF are not the file's, a CR of the
// file's own (before an LF too) is.
func TestDataSourceCountsFileBytes(t *testing.T) {
	file := "a\r\nb\n\r\n\n\rc\r"
	for step := 1; step <= 4; step++ {
		d := newDataSource(strings.NewReader(file), true)
		var sent []byte
		total := 0
		for {
			if err := d.fill(); err != nil {
				t.Fatal(err)
			}
			if d.empty() {
				break
			}
			n := min(step, len(d.pending()))
			sent = append(sent, d.pending()[:n]...)
			total += d.consume(n)
		}
		if want := strings.ReplaceAll(file, "\n", "\r\n"); !bytes.Equal(sent, []byte(want)) {
			t.Fatalf("step %d: sent %q, want %q", step, sent, want)
		}
		if total != len(file) {
			t.Errorf("step %d: counted %d file bytes, want %d", step, total, len(file))
		}
	}
}
