//go:build amd64 && !purego

package framing

import "golang.org/x/sys/cpu"

// canFold: HasAVX512 includes the OS's saving of the 512-bit registers.
var canFold = cpu.X86.HasAVX512 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ

// fold XORs reg into the first 4 bytes of b, folds b (a non-zero
// multiple of foldBytes long) into foldBytes, and writes them to out
// (see crc32c_fold.go).
//
//go:noescape
func fold(reg uint32, b []byte, out *[foldBytes]byte)
