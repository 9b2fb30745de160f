#!/usr/bin/python3
"""bench_contexts.py: start time and trivial-cell round trip of the context drivers (Python,
JavaScript, TypeScript).

Speaks to src/drivers/sbxfs-pydriver and sbxfs-jsdriver over their descriptors as the daemon will
(tests/integration/pydriver.py), outside the sandbox: the drivers' own cost, without the mount.
Start: from spawning the driver to its ready frame. Round trip: from sending the cell `1+1` to
its done frame, with its result. Prints median and p90 in milliseconds.

usage: tests/bench/bench_contexts.py [--starts N] [--cells N] [--languages python,javascript,...]
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from benchutil import med_p90  # noqa: E402
from pydriver import JSDRIVER, Driver  # noqa: E402

COMMANDS = {
    "python": None,
    "javascript": [str(JSDRIVER), "javascript"],
    "typescript": [str(JSDRIVER), "typescript"],
}


def bench(language, starts, cells):
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
            cell = d.run("1+1")
            trips.append((time.monotonic() - t0) * 1000)
            assert cell.results[0]["data"] == {"text/plain": "2"}, cell.results
    finally:
        d.close()
    print("%s context start: median %.1f ms, p90 %.1f ms (%d starts)" %
          (language, *med_p90(times), starts))
    print("%s cell 1+1 round trip: median %.2f ms, p90 %.2f ms (%d cells)" %
          (language, *med_p90(trips), cells))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--languages", default=",".join(COMMANDS))
    args = ap.parse_args()
    for language in args.languages.split(","):
        bench(language, args.starts, args.cells)


if __name__ == "__main__":
    main()
