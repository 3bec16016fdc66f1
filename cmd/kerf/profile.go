package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startProfiling starts a CPU profile and/or an execution trace when
// KERF_CPUPROFILE or KERF_TRACE name a file, so that a slow transfer can be
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
	if name := os.Getenv("KERF_CPUPROFILE"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			return stop, fmt.Errorf("KERF_CPUPROFILE: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("KERF_CPUPROFILE: %w", err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if name := os.Getenv("KERF_TRACE"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			return stop, fmt.Errorf("KERF_TRACE: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("KERF_TRACE: %w", err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}
