"""Shares of the SQLite writer thread's samples by where they were spent.

Reads `perf script` output (DWARF call graphs of the `tollgate-writer`
thread, from scripts/profile-writer.sh) on stdin. Each sample is put in one
bucket by the frames on its stack: the checkpoint, the commit's WAL writes,
the commands themselves (SQLite, page reads, or the engine's Rust), and the
rest by its innermost function.
"""

import collections
import re
import sys


def frames(sample):
    """The function names of one sample's stack, innermost first."""
    out = []
    for line in sample.splitlines()[1:]:
        parts = line.strip().split(" ", 1)
        if len(parts) == 2:
            name = parts[1].rsplit(" (", 1)[0]
            out.append(re.sub(r"\+0x[0-9a-f]+$", "", name))
    return out


def io(stack):
    for name, key in (("fsync", "fsync"), ("pwrite", "write"), ("pread", "read")):
        if any(name in f for f in stack):
            return key
    return "other"


def in_command(stack):
    """Under an engine frame other than the writer loop itself."""
    return any("tollgate::" in f and "writer_loop" not in f for f in stack)


def bucket(stack):
    if "walCheckpoint" in stack:
        return "checkpoint: " + io(stack)
    if "pagerWalFrames" in stack:
        return "commit, WAL frames: " + io(stack)
    if in_command(stack):
        if io(stack) == "read":
            return "commands: page reads (pread)"
        if any(f.startswith("sqlite3") for f in stack):
            return "commands: SQLite"
        return "commands: engine (Rust)"
    return "other: " + (stack[0][:60] if stack else "?")


def main():
    counts = collections.Counter()
    total = 0
    for sample in sys.stdin.read().split("\n\n"):
        stack = frames(sample)
        if not stack:
            continue
        total += 1
        counts[bucket(stack)] += 1
    if not total:
        sys.exit("no samples")
    print(f"{total} samples of the writer thread")
    shown = 0.0
    for name, n in counts.most_common():
        share = 100 * n / total
        if share < 1 and name.startswith("other"):
            continue
        shown += share
        print(f"{share:5.1f} %  {name}")
    print(f"{100 - shown:5.1f} %  other (each under 1 %)")


if __name__ == "__main__":
    main()
