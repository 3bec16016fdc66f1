// Package probes holds the throw-away measurements that decided a design
// question, kept so that their figures in docs/benchmarks.md can be made
// again: `go test -run '^$' -bench . ./bench/probes/` (TMPDIR on tmpfs
// for the file ones). They measure alternatives, not kerf's own code.
package probes
