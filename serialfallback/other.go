//go:build !linux

package serialfallback

import (
	"errors"
	"fmt"
	"runtime"
)

var errUnsupported = fmt.Errorf("serialfallback: not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)

func isPty(string) bool { return false }

func openTTY(string, int, flow) (port, error) { return nil, errUnsupported }

func openStdio(int, int, flow) (port, error) { return nil, errUnsupported }

type flowSide struct{}

func openFlowSide(_ string, fl flow) (*flowSide, error) {
	if fl != flowNone {
		return nil, errUnsupported
	}
	return &flowSide{}, nil
}

func (*flowSide) apply() error { return nil }
func (*flowSide) close()       {}
