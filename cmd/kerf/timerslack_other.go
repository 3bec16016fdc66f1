//go:build !linux

package main

import (
	"context"
	"time"
)

// raiseTimerSlack does nothing: the timer slack is Linux's.
func raiseTimerSlack(context.Context, time.Duration) {}
