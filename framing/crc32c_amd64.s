//go:build amd64 && !purego

#include "textflag.h"

// func fold(reg uint32, b []byte, out *[256]byte)
//
// Four 512-bit registers hold the 16 lanes of 128 bits; each pass folds
// every lane 256 bytes forward and XORs in the next 256 bytes of b. Z5
// holds [K_lo, K_hi] in each of its four 128-bit lanes.
TEXT ·fold(SB), NOSPLIT, $0-40
	MOVL reg+0(FP), AX
	MOVQ b_base+8(FP), SI
	MOVQ b_len+16(FP), CX
	MOVQ out+32(FP), DI

	VMOVDQU64 (SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVD     AX, X4
	VPXORQ    Z4, Z0, Z0
	VBROADCASTI32X4 ·foldKeys(SB), Z5
	ADDQ $256, SI
	SUBQ $256, CX

loop:
	CMPQ CX, $256
	JB   done
	VPCLMULQDQ $0x00, Z5, Z0, Z6
	VPCLMULQDQ $0x11, Z5, Z0, Z0
	VPTERNLOGQ $0x96, (SI), Z6, Z0
	VPCLMULQDQ $0x00, Z5, Z1, Z7
	VPCLMULQDQ $0x11, Z5, Z1, Z1
	VPTERNLOGQ $0x96, 64(SI), Z7, Z1
	VPCLMULQDQ $0x00, Z5, Z2, Z8
	VPCLMULQDQ $0x11, Z5, Z2, Z2
	VPTERNLOGQ $0x96, 128(SI), Z8, Z2
	VPCLMULQDQ $0x00, Z5, Z3, Z9
	VPCLMULQDQ $0x11, Z5, Z3, Z3
	VPTERNLOGQ $0x96, 192(SI), Z9, Z3
	ADDQ $256, SI
	SUBQ $256, CX
	JMP  loop

done:
	VMOVDQU64 Z0, (DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	VZEROUPPER
	RET
