package control

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A session whose engine is busy (reading a big partial for its check)
// is not idle, however long nothing moves on its connections; once it is
// not busy, the idle time counts again.
func TestWatchIdleWaitsWhileBusy(t *testing.T) {
	var busy, canceled atomic.Bool
	busy.Store(true)
	done := make(chan struct{})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		watchIdle(ctx, 20*time.Millisecond, newLiveness(func() int64 { return 0 }, busy.Load), func() { canceled.Store(true); close(done) })
	}()
	time.Sleep(200 * time.Millisecond) // ten idle periods
	if canceled.Load() {
		t.Fatal("a busy session was ended as idle")
	}
	busy.Store(false)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an idle session that stopped being busy was not ended")
	}
}
