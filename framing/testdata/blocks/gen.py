#!/usr/bin/env python3
"""Writes the golden data-channel frames in this folder.

It is independent of the Go code on purpose: a bitwise CRC-32C and
struct.pack, straight from the layout in framing/block.go. Run it from
this folder; the Go test only reads its output.
"""
import struct
import subprocess


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def frame(magic, version, flags, reserved, fid, off, length, crc):
    body = magic + struct.pack(">BBHIQII", version, flags, reserved, fid, off, length, crc)
    assert len(body) == 28
    return body + struct.pack(">I", crc32c(body))


def block(name, flags, fid, off, payload=None, length=None, err=None, mutate=None, version=1, reserved=0, magic=b"KRFB"):
    payload = payload if payload is not None else b""
    length = len(payload) if length is None else length
    # A block of zeros (flag 2) carries the CRC of that many zero bytes.
    pcrc = crc32c(bytes(length)) if flags & 2 else crc32c(payload)
    b = bytearray(frame(magic, version, flags, reserved, fid, off, length, pcrc))
    if mutate:
        mutate(b)
    with open(name + ".txt", "w") as f:
        f.write("kind block\n")
        if err is None:
            f.write(f"flags {flags}\nfile {fid}\noffset {off}\nlength {length}\npayloadcrc {pcrc:08x}\n")
            if payload:
                f.write(f"payload {payload.hex()}\n")
        else:
            f.write(f"err {err}\n")
        f.write(f"hex {bytes(b).hex()}\n")


def resend(name, fid, off, length, err=None, mutate=None, flags=0):
    b = bytearray(frame(b"KRFN", 1, flags, 0, fid, off, length, 0))
    if mutate:
        mutate(b)
    with open(name + ".txt", "w") as f:
        f.write("kind resend\n")
        if err is None:
            f.write(f"file {fid}\noffset {off}\nlength {length}\n")
            if flags & 1:
                f.write("stop 1\n")
        else:
            f.write(f"err {err}\n")
        f.write(f"hex {bytes(b).hex()}\n")


def flip(i, bit):
    def m(b):
        b[i] ^= 1 << bit
    return m


block("empty", 0, 1, 0)
block("digits", 0, 1, 0, payload=b"123456789")
block("hello-mid-file", 0, 7, 262144, payload=b"hello, kerf\n")
block("large-offset", 0, 0xFFFFFFFF, (1 << 40) + 12345, length=1 << 18)
block("max-length", 0, 2, 0, length=16 << 20)
block("compressed-flag", 1, 3, 4096, length=100)
block("too-long", 0, 2, 0, length=(16 << 20) + 1, err="toolong")
block("bad-magic", 0, 1, 0, magic=b"KRFX", err="magic")
block("bad-header-check", 0, 1, 0, payload=b"123456789", mutate=flip(13, 0), err="headercheck")
block("bad-header-crc-field", 0, 1, 0, mutate=flip(31, 7), err="headercheck")
block("bad-version", 0, 1, 0, version=2, err="version")
block("zeros-flag", 2, 5, 1 << 20, length=4096)
block("unknown-flag", 4, 1, 0, err="reserved")
block("zeros-and-compressed", 3, 1, 0, length=4096, err="reserved")
block("reserved-bytes", 0, 1, 0, reserved=1, err="reserved")
resend("resend", 4, 786432, 262144)
resend("resend-bad-check", 4, 786432, 262144, mutate=flip(20, 3), err="headercheck")
resend("resend-zero-length", 4, 0, 0)  # "the block you sent at offset 0"
resend("stop", 9, 0, 0, flags=1)  # "send nothing more of file 9"
resend("stop-with-offset", 9, 4096, 0, flags=1, err="reserved")
resend("resend-unknown-flag", 4, 0, 4096, flags=2, err="reserved")


def compressed(name, fid, off, raw):
    """A compressed block: prefix (length and CRC-32C of raw), then a zstd
    frame made by the reference zstd command line tool, so that kerf's
    decoder is checked against another implementation."""
    z = subprocess.run(["zstd", "-q", "-c", "-1", "--no-check"], input=raw, check=True, capture_output=True).stdout
    payload = struct.pack(">II", len(raw), crc32c(raw)) + z
    block(name, 1, fid, off, payload=payload)
    with open(name + ".txt", "a") as f:
        f.write(f"raw {raw.hex()}\nrawcrc {crc32c(raw):08x}\n")


compressed("compressed-zstd", 3, 1 << 20, b"kerf moves files. " * 64 + bytes(range(256)))
