package datachan

import (
	"errors"
	"testing"

	"kerf/framing"
)

// A receiver's block limit: a bigger block, plain or compressed (by
// the file bytes it stands for), fails the path as a protocol error; a
// sender capped at it cuts its blocks to fit, whatever its block size
// (QA v: a client's 16 MiB blocks cost the server 107 MB a session).
func TestReceiveLimitAndBlockSizeCap(t *testing.T) {
	t.Run("capped sender", func(t *testing.T) {
		cc, sc := pairedConns(t, 1)
		s := NewPath(cc, WithBlockSize(64<<10), WithBlockSizeCap(16<<10))
		r := NewPath(sc, WithReceiveLimit(16<<10))
		t.Cleanup(func() { s.Close(); r.Close() })
		data := randomData(31, 100<<10)
		transfer(t, s, r, 1, data)
		if n := r.Stats().BlocksReceived; n != 7 { // 100 KiB in 16 KiB blocks
			t.Errorf("%d blocks received, want 7 of at most 16 KiB", n)
		}
	})
	t.Run("plain block over the limit", func(t *testing.T) {
		a, b := pairedConns(t, 1)
		r := NewPath(b, WithReceiveLimit(2048))
		t.Cleanup(func() { r.Close(); a[0].Close() })
		dst := newMemFile(4096)
		if err := r.Expect(1, dst, 0, 4096); err != nil {
			t.Fatal(err)
		}
		writeBlock(t, a[0], 1, 0, randomData(32, 4096))
		if _, err := r.Wait(testContext(t), 1); !errors.Is(err, ErrProtocol) {
			t.Fatalf("Wait: %v, want a protocol error", err)
		}
	})
	t.Run("compressed block standing for more", func(t *testing.T) {
		a, b := pairedConns(t, 1)
		r := NewPath(b, WithReceiveLimit(2048), WithCompression(true))
		t.Cleanup(func() { r.Close(); a[0].Close() })
		raw := make([]byte, 4096) // zeros: a small frame
		if n := len(compressedPayload(uint32(len(raw)), framing.CRC32C(raw), raw)); n > 2048 {
			t.Fatalf("test setup: compressed payload of %d bytes", n)
		}
		dst := newMemFile(len(raw))
		if err := r.Expect(1, dst, 0, int64(len(raw))); err != nil {
			t.Fatal(err)
		}
		writeCompressedBlock(t, a[0], 1, 0, raw)
		if _, err := r.Wait(testContext(t), 1); !errors.Is(err, ErrProtocol) {
			t.Fatalf("Wait: %v, want a protocol error", err)
		}
	})
}
