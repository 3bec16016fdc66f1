#!/usr/bin/env python3
"""Split a raw Kermit byte dump into packets: prints 'TYPE SEQ CHK "data"' per
packet, data Go-quoted. The block check is found by trying types 3, 2, B and 1
(the first that verifies wins). Bytes that do not start a verifiable packet
are reported on stderr and skipped."""
import sys

def q(b):
    out = []
    for c in b:
        if c == 0x5c: out.append('\\\\')
        elif c == 0x22: out.append('\\"')
        elif 32 <= c < 127: out.append(chr(c))
        else: out.append('\\x%02x' % c)
    return '"' + ''.join(out) + '"'

def tochar(x): return x + 32

def chk1(b):
    s = sum(b)
    return bytes([tochar((s + ((s & 0xC0) >> 6)) & 0x3F)])

def chk2(b):
    s = sum(b) & 0xFFF
    return bytes([tochar((s >> 6) & 0o77), tochar(s & 0o77)])

def chk3(b):
    crc = 0
    for c in b:
        q_ = (crc ^ c) & 0o17
        crc = (crc >> 4) ^ (q_ * 0o10201)
        q_ = (crc ^ (c >> 4)) & 0o17
        crc = (crc >> 4) ^ (q_ * 0o10201)
    return bytes([tochar((crc >> 12) & 0o17), tochar((crc >> 6) & 0o77), tochar(crc & 0o77)])

def chkB(b):
    s = sum(b) & 0xFFF
    return bytes([tochar(((s >> 6) & 0o77) + 1), tochar((s & 0o77) + 1)])

CHK = {1: chk1, 2: chk2, 3: chk3, 4: chkB}
NAME = {1: '1', 2: '2', 3: '3', 4: 'B'}

def packets(buf):
    i, n = 0, len(buf)
    while i < n:
        if buf[i] != 1:
            i += 1; continue
        if i + 4 > n: break
        ln = buf[i+1] - 32
        seq = buf[i+2] - 32
        typ = chr(buf[i+3])
        found = None
        if ln == 0:
            if i + 7 > n: break
            m = (buf[i+4]-32)*95 + (buf[i+5]-32)
            end = i + 7 + m
            for c in (3, 2, 4, 1):
                k = 2 if c == 4 else c
                body = buf[i+1:end-k]
                if CHK[c](body) == buf[end-k:end]:
                    found = (NAME[c], buf[i+7:end-k]); break
        else:
            end = i + 2 + ln
            for c in (3, 2, 4, 1):
                k = 2 if c == 4 else c
                body = buf[i+1:end-k]
                if len(body) >= 3 and CHK[c](body) == buf[end-k:end]:
                    found = (NAME[c], buf[i+4:end-k]); break
        if found is None:
            print('#BAD at', i, file=sys.stderr)
            i += 1; continue
        yield typ, seq, found[0], bytes(found[1])
        i = end

if __name__ == '__main__':
    buf = open(sys.argv[1], 'rb').read()
    types = sys.argv[2] if len(sys.argv) > 2 else None
    for typ, seq, c, data in packets(buf):
        if types is None or typ in types:
            print(typ, seq, c, q(data))
