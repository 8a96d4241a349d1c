#!/usr/bin/env python3
"""Which B-trees a window of commits wrote, from the WAL itself (issue #17).

    wal_frames.py hold DB SECONDS   open a read transaction on DB (so the WAL
                                    cannot start over), note where the WAL ends,
                                    wait SECONDS, then copy DB and its WAL and
                                    count the frames written since, by the
                                    table or index each page belongs to

Every commit appends one frame per page it changed; SQLite's `dbstat` table on
a copy says which B-tree each page number belongs to now. Resolves in the
window are counted as interrupts that became resolved. Frames whose salt is
not the WAL header's are left over from before the WAL last started over.
"""
import os
import shutil
import sqlite3
import struct
import sys
import tempfile
import time
from collections import Counter


def frames(wal_path):
    """(salt, [(pgno, is_commit)]) of the valid frames, in order."""
    with open(wal_path, "rb") as f:
        data = f.read()
    if len(data) < 32:
        return None, []
    _magic, _version, page_size, _seq, salt1, salt2 = struct.unpack(">IIIIII", data[:24])
    out, at = [], 32
    while at + 24 + page_size <= len(data):
        pgno, commit_size, s1, s2 = struct.unpack(">IIII", data[at : at + 16])
        if (s1, s2) != (salt1, salt2):
            break
        out.append((pgno, commit_size != 0))
        at += 24 + page_size
    return (salt1, salt2), out


def resolved(conn):
    return conn.execute("SELECT count(*) FROM interrupts WHERE status = 'resolved'").fetchone()[0]


def hold(db, seconds):
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    reader.execute("BEGIN")
    before = resolved(reader)  # the read transaction starts here: the WAL cannot start over
    salt0, frames0 = frames(db + "-wal")
    time.sleep(seconds)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "copy.db")
        shutil.copyfile(db, copy)
        shutil.copyfile(db + "-wal", copy + "-wal")
        reader.execute("COMMIT")
        salt1, frames1 = frames(copy + "-wal")
        window = frames1[len(frames0) :] if salt1 == salt0 else frames1
        conn = sqlite3.connect(copy, isolation_level=None)
        owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
        n = resolved(conn) - before
        conn.close()
    commits = sum(1 for _, c in window if c)
    by_tree = Counter(owner.get(pgno, "(freelist)") for pgno, _ in window)
    print(f"{len(window)} frames in {commits} commits for {n} resolves: "
          f"{len(window) / max(n, 1):.2f} frames per resolve, {n / max(commits, 1):.1f} resolves per commit")
    print(f"{'table or index':40} {'frames/resolve':>14} {'share':>6}")
    for name, count in by_tree.most_common():
        print(f"{name:40} {count / max(n, 1):14.2f} {count / len(window):6.1%}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "hold":
        sys.exit(__doc__)
    hold(sys.argv[2], float(sys.argv[3]))
