#!/usr/bin/env python3
"""zframes.py FILE: one line for each zstd frame of FILE: its offset,
length and the SHA-1 of its bytes (frames told apart by walking their
block headers, RFC 8878), so that a test can see which frames a filter
passed on as they came."""
import hashlib
import sys


def frames(b):
    i = 0
    while i < len(b):
        start = i
        if b[i:i + 4] != b"\x28\xb5\x2f\xfd":
            sys.exit("zframes.py: no zstd frame at offset %d" % i)
        fhd = b[i + 4]
        i += 5
        single = (fhd >> 5) & 1
        did = [0, 1, 2, 4][fhd & 3]
        fcs = [0, 2, 4, 8][fhd >> 6]
        if fhd >> 6 == 0 and single:
            fcs = 1
        i += (0 if single else 1) + did + fcs
        while True:
            h = b[i] | b[i + 1] << 8 | b[i + 2] << 16
            i += 3
            last, btype, size = h & 1, (h >> 1) & 3, h >> 3
            i += 1 if btype == 1 else size
            if last:
                break
        if (fhd >> 2) & 1:
            i += 4
        yield start, i - start


def main():
    b = open(sys.argv[1], "rb").read()
    for off, n in frames(b):
        print(off, n, hashlib.sha1(b[off:off + n]).hexdigest())


main()
