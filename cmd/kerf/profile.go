package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startProfiling starts a CPU profile and/or an execution trace when
// KERF_CPUPROFILE or KERF_TRACE name a file (and KERF_MEMPROFILE gets
// a heap profile at the end), so that a slow transfer can be
// looked at on the machine where it is slow (go tool pprof / go tool trace).
// The returned function ends both; main calls it before exiting, also
// after SIGINT or SIGTERM, which is how a server is stopped.
func startProfiling() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for _, p := range []struct {
		env   string
		start func(io.Writer) error
		stop  func()
	}{
		{"KERF_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile},
		{"KERF_TRACE", trace.Start, trace.Stop},
	} {
		name := os.Getenv(p.env)
		if name == "" {
			continue
		}
		f, err := os.Create(name)
		if err == nil {
			if err = p.start(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			return stop, fmt.Errorf("%s: %w", p.env, err)
		}
		stops = append(stops, func() { p.stop(); f.Close() })
	}
	if name := os.Getenv("KERF_MEMPROFILE"); name != "" {
		// Written at the end, after a collection: what is still live.
		stops = append(stops, func() {
			f, err := os.Create(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "kerf: KERF_MEMPROFILE:", err)
				return
			}
			runtime.GC()
			runtime.GC() // pooled buffers last one collection more
			pprof.WriteHeapProfile(f)
			f.Close()
		})
	}
	return stop, nil
}
