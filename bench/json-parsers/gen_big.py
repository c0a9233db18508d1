#!/usr/bin/env python3
"""Make a large Kineto-style trace for the JSON parser benchmark.

Copies the *text* of the events of the top-level "traceEvents" array of
INPUT (a plain or .gz JSON file) COPIES times into a single traceEvents
array, keeping everything else of the document (and the original formatting)
unchanged.  Expected parser result: events and dursum both multiplied by
COPIES.

usage: gen_big.py INPUT OUTPUT [COPIES] [MIN_BYTES]
  COPIES     default 40; raised until the output is at least MIN_BYTES
  MIN_BYTES  default 1000000000
"""
import gzip
import json
import math
import os
import re
import sys


def main():
    if len(sys.argv) < 3 or len(sys.argv) > 5:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    copies = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    min_bytes = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000_000

    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rb") as f:
        text = f.read().decode("utf-8")

    m = re.search(r'"traceEvents"\s*:\s*\[', text)
    if m is None:
        sys.exit(f"{src}: no traceEvents array")
    start = m.end() - 1  # index of '['
    # raw_decode finds the exact end of the array (handles strings/nesting).
    _, end = json.JSONDecoder().raw_decode(text, start)  # end: just past ']'
    inner = text[start + 1:end - 1].strip()
    if not inner:
        sys.exit(f"{src}: traceEvents is empty")

    head, tail = text[:start + 1] + "\n", "\n" + text[end - 1:]
    body_len = len(inner.encode("utf-8"))
    fixed = len(head.encode("utf-8")) + len(tail.encode("utf-8"))
    need = math.ceil((min_bytes - fixed + 1) / (body_len + 2))
    copies = max(copies, need)

    tmp = dst + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(head)
        for i in range(copies):
            if i:
                out.write(",\n")
            out.write(inner)
        out.write(tail)
    os.replace(tmp, dst)
    print(f"copies={copies} bytes={os.path.getsize(dst)}")


if __name__ == "__main__":
    main()
