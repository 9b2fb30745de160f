#!/usr/bin/python3
"""bench_contexts.py: start time and trivial-cell round trip of contexts, per language (Python,
JavaScript, TypeScript).

Through the files (a fresh sbxfs mount, binary $SBXFS_BIN or build/sbxfs): context start is
from `mkdir contexts/NAME` (and writing its language) to the end of its first cell `1+1` (code
written, result read, the driver started in the sandbox on the way); the round trip is one more
cell `1+1` through the run handle on `code` and its `cells/N/result`. A language whose driver
is not installed is reported and skipped.

With --driver: the drivers alone, src/drivers/sbxfs-pydriver and sbxfs-jsdriver spoken to over
their descriptors as the daemon does (tests/integration/pydriver.py), outside the sandbox and
without the mount. Start: from spawning the driver to its ready frame. Round trip: from sending
the cell `1+1` to its done frame, with its result.

Prints median and p90 in milliseconds.

usage: tests/bench/bench_contexts.py [--starts N] [--cells N] [--languages L,...] [--driver]
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from benchutil import (Mount, med_p90, read_to_eof, sbxfs_binary, start_watchdog,  # noqa: E402
                       write_file)
from pydriver import JSDRIVER, Driver  # noqa: E402

COMMANDS = {
    "python": None,
    "javascript": [str(JSDRIVER), "javascript"],
    "typescript": [str(JSDRIVER), "typescript"],
}


def cell(ctx, code):
    """Through the run handle: the cell's number back, then its result (blocks to its end)."""
    fd = os.open(ctx / "code", os.O_RDWR)
    try:
        os.write(fd, code)
        n = int(os.read(fd, 32))
    finally:
        os.close(fd)
    return json.loads(read_to_eof(str(ctx / "cells" / str(n) / "result")))


def bench_language(m, language, starts, cells):
    """Starts and round trips of one language on mount m; None if it cannot run there."""
    times, trips = [], []
    for i in range(starts):
        ctx = m.mnt / "contexts" / f"{language}{i}"
        os.mkdir(ctx)
        try:
            write_file(str(ctx / "language"), language.encode() + b"\n")
        except OSError:
            os.rmdir(ctx)
            return None
        t0 = time.monotonic()
        res = cell(ctx, b"1+1")
        times.append((time.monotonic() - t0) * 1000)
        assert res["results"][0]["text"] == "2", res
        if i:
            os.rmdir(ctx)
    ctx = m.mnt / "contexts" / f"{language}0"
    for _ in range(cells):
        t0 = time.monotonic()
        res = cell(ctx, b"1+1")
        trips.append((time.monotonic() - t0) * 1000)
        assert res["results"][0]["text"] == "2", res
    os.rmdir(ctx)
    return times, trips


def bench_files(args):
    m = Mount(sbxfs_binary())
    watchdog = start_watchdog(600, m.proc)
    try:
        mode = m.cgroup_mode()
        for language in args.languages.split(","):
            got = bench_language(m, language, args.starts, args.cells)
            if got is None:
                print(f"{language}: no driver or runtime (writing language failed)")
                continue
            print("%s context start (mkdir to first cell done, cgroup %s): median %.1f ms, "
                  "p90 %.1f ms (%d starts)" % (language, mode, *med_p90(got[0]), args.starts))
            print("%s cell 1+1 through code and result: median %.2f ms, p90 %.2f ms "
                  "(%d cells)" % (language, *med_p90(got[1]), args.cells))
    finally:
        watchdog.cancel()
        m.close()


def bench_driver(language, starts, cells):
    cmd = COMMANDS[language]
    times = []
    for _ in range(starts):
        t0 = time.monotonic()
        d = Driver(cmd=cmd)
        times.append((time.monotonic() - t0) * 1000)
        d.close()
        assert d.ready["ev"] == "ready", d.ready

    d = Driver(cmd=cmd)
    trips = []
    try:
        for _ in range(cells):
            t0 = time.monotonic()
            c = d.run("1+1")
            trips.append((time.monotonic() - t0) * 1000)
            assert c.results[0]["data"] == {"text/plain": "2"}, c.results
    finally:
        d.close()
    print("%s driver start: median %.1f ms, p90 %.1f ms (%d starts)" %
          (language, *med_p90(times), starts))
    print("%s driver 1+1 round trip: median %.2f ms, p90 %.2f ms (%d cells)" %
          (language, *med_p90(trips), cells))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--languages", default=",".join(COMMANDS))
    ap.add_argument("--driver", action="store_true",
                    help="the drivers alone over their descriptors, without the mount")
    args = ap.parse_args()
    if not args.driver:
        bench_files(args)
        return
    for language in args.languages.split(","):
        bench_driver(language, args.starts, args.cells)


if __name__ == "__main__":
    main()
