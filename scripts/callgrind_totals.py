#!/usr/bin/env python3
"""Instructions per create and per resolve from scripts/instructions.sh's
callgrind dumps (one file per dump and thread, --separate-threads=yes):
PREFIX.1-NN is the server's start, PREFIX.2-NN the creates, PREFIX-NN
(written at exit) the resolves and the shutdown. The writer thread's file is
the one whose functions include the writer loop.

usage: callgrind_totals.py PREFIX CREATES RESOLVES
"""
import glob
import re
import sys


def totals(pattern):
    """(all threads, writer thread) instructions over the files of one dump."""
    everything = writer = 0
    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit(f"no callgrind dump matches {pattern}")
    for path in files:
        text = open(path, encoding="utf-8", errors="replace").read()
        found = re.search(r"^totals: (\d+)", text, re.M)
        count = int(found.group(1)) if found else 0
        everything += count
        if "writer_loop" in text:
            writer += count
    return everything, writer


def main():
    prefix, creates, resolves = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for label, pattern, n in (
        ("create", f"{prefix}.2-*", creates),
        ("resolve", f"{prefix}-[0-9]*", resolves),
    ):
        if n == 0:
            print(f"{label:8} {n:6} requests")
            continue
        everything, writer = totals(pattern)
        print(
            f"{label:8} {n:6} requests  {everything / n / 1e6:7.3f} M instructions/req"
            f"  (writer thread {writer / n / 1e6:.3f} M)"
        )


if __name__ == "__main__":
    main()
