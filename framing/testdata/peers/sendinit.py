#!/usr/bin/env python3
"""Play a minimal Kermit sender on stdin/stdout: send one S packet whose data
field is the content of the file argv[1] (type-1 check), collect whatever
comes back for 4 seconds, then send an E packet. Used by capture.sh to check
how real receivers take kerf's Send-Init extensions."""
import os, sys, time, select
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pkts

def packet(seq, typ, data):
    body = bytes([32 + 2 + len(data) + 1, 32 + seq, ord(typ)]) + data
    return b'\x01' + body + pkts.chk1(body) + b'\r'

data = open(sys.argv[1], 'rb').read()
time.sleep(1.0)
os.write(1, packet(0, 'S', data))
end = time.time() + 4
while time.time() < end:
    if select.select([0], [], [], 0.2)[0]:
        if not os.read(0, 4096):
            break
os.write(1, packet(1, 'E', b'kerf capture done'))
time.sleep(1)
