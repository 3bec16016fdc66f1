#!/usr/bin/env python3
# Known-answer vectors for kerf's data records (datachan/records.go,
# docs/protocol-datachan.md §5), computed with the Python "cryptography"
# package, independently of the Go code: HKDF-Expand-SHA256 for the key
# and IV of each epoch, AES-128-GCM for the records.
#   python3 datachan/testdata/records_kat.py > datachan/testdata/records_kat.txt
import struct
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

def expand(secret, info, n):
    return HKDFExpand(algorithm=hashes.SHA256(), length=n, info=info).derive(secret)

def record(secret, shift, seq, plain, end=False):
    epoch = struct.pack(">Q", seq >> shift)
    key = expand(secret, b"kerf data key " + epoch, 16)
    iv = bytearray(expand(secret, b"kerf data iv " + epoch, 12))
    for i, b in enumerate(struct.pack(">Q", seq)):
        iv[4 + i] ^= b
    h = len(plain) + 16
    if end:
        h |= 1 << 31
    hdr = struct.pack(">I", h)
    return hdr + AESGCM(key).encrypt(bytes(iv), plain, hdr)

secret = bytes(range(32))
# One stream: records 0..5 with an epoch of 4 records (shift 2), so that
# records 4 and 5 use the second key; the last is the end record.
shift = 2
plains = [b"hello", b"\x00", b"x" * 100, bytes(range(256)), b"kerf", b"!"]
print("# secret", secret.hex())
print("# shift", shift)
for seq, p in enumerate(plains):
    end = seq == len(plains) - 1
    if end:
        p = b""
    print(seq, "end" if end else "data", p.hex() or "-", record(secret, shift, seq, p, end).hex())
