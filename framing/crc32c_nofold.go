//go:build !amd64 || purego

package framing

// Folding needs VPCLMULQDQ on 512-bit registers (amd64); elsewhere
// hash/crc32 does all the work.
const canFold = false

func fold(reg uint32, b []byte, out *[foldBytes]byte) { panic("framing: fold without VPCLMULQDQ") }
