#!/usr/bin/python3
"""bench_contexts.py: start time and trivial-cell round trip of the Python context driver.

Speaks to src/drivers/sbxfs-pydriver over its descriptors as the daemon will
(tests/integration/pydriver.py), outside the sandbox: the driver's own cost, without the mount.
Start: from spawning the driver to its ready frame. Round trip: from sending the cell `1+1` to
its done frame, with its result. Prints median and p90 in milliseconds.

usage: tests/bench/bench_contexts.py [--starts N] [--cells N]
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from benchutil import med_p90  # noqa: E402
from pydriver import Driver  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--cells", type=int, default=200)
    args = ap.parse_args()

    starts = []
    for _ in range(args.starts):
        t0 = time.monotonic()
        d = Driver()
        starts.append((time.monotonic() - t0) * 1000)
        d.close()

    d = Driver()
    trips = []
    try:
        for _ in range(args.cells):
            t0 = time.monotonic()
            cell = d.run("1+1")
            trips.append((time.monotonic() - t0) * 1000)
            assert cell.results[0]["data"] == {"text/plain": "2"}, cell.results
    finally:
        d.close()
    print("python context start: median %.1f ms, p90 %.1f ms (%d starts)" %
          (*med_p90(starts), args.starts))
    print("python cell 1+1 round trip: median %.2f ms, p90 %.2f ms (%d cells)" %
          (*med_p90(trips), args.cells))


if __name__ == "__main__":
    main()
