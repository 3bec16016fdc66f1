package framing

import "testing"

// BenchmarkBlockFrame is the framing work of one 256 KiB data-channel
// block on both sides: the sender's payload CRC-32C and header Put, the
// receiver's header parse and payload check. The payload bytes are what
// b.SetBytes counts; a block allocates nothing.
func BenchmarkBlockFrame(b *testing.B) {
	for _, size := range []int{16 << 10, 256 << 10, 1 << 20} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		var hdr [BlockHeaderLen]byte
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				BlockHeader{FileID: 1, Offset: 1 << 30, Length: uint32(size), PayloadCRC: CRC32C(payload)}.Put(hdr[:])
				h, err := ParseBlockHeader(hdr[:])
				if err != nil {
					b.Fatal(err)
				}
				if err := h.CheckPayload(payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
