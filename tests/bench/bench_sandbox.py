#!/usr/bin/python3
"""bench_sandbox.py: what the bubblewrap sandbox costs, against --isolation none.

Measures in one run (binary: $SBXFS_BIN, else build/sbxfs of this checkout; run as root):

  (a) sandbox start time: from starting `sbxfs -f` until the first command's exit can be
      read, i.e. mount + `echo true > sessions/default/cmd; cat sessions/default/exit`, for
      isolation bwrap and none (RUNS mounts each, interleaved; median, min and max). Each
      mount is unmounted (sbxfs -u) and waited for before the next one;
  (b) the per-command round trip `echo true > cmd; cat exit` (open/write/close cmd, then read
      exit to EOF, with plain os calls) in a session of a bwrap mount and of a none mount,
      N runs each after a warm-up, interleaved so load changes hit both alike: median and p90,
      and the ratios bwrap / none.

Takes well under a minute; a watchdog kills the daemons if a step hangs.

usage: tests/bench/bench_sandbox.py [--starts N] [--runs N] [--warmup N]
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import med_p90, read_to_eof, sbxfs_binary, write_file  # noqa: E402

WATCHDOG_SECONDS = 110
LIVE = set()


def mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            field = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if field == path:
                return True
    return False


def round_trip(session):
    write_file(session / "cmd", b"true\n")
    if read_to_eof(session / "exit") != b"0\n":
        sys.exit(f"`true` in {session} did not exit 0")


class Mount:
    """One `sbxfs -f` in a temporary directory; started() returns the seconds until the first
    command's exit was read."""

    def __init__(self, binary, isolation):
        self.tmp = Path(tempfile.mkdtemp(prefix=f"sbxfs-bench-{isolation}-"))
        self.mnt = self.tmp / "mnt"
        for d in ("ws", "state", "mnt"):
            (self.tmp / d).mkdir()
        self.log = open(self.tmp / "sbxfs.log", "wb")
        self.cmdline = [str(binary), "-f", "--isolation", isolation,
                        "--workspace", str(self.tmp / "ws"), "--state-dir",
                        str(self.tmp / "state"), str(self.mnt)]
        self.proc = None

    def start(self):
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.cmdline, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        LIVE.add(self)
        deadline = time.monotonic() + 10
        while not mounted(self.mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                sys.exit(f"sbxfs did not mount:\n{self.log_text()}")
            time.sleep(0.001)
        round_trip(self.mnt / "sessions" / "default")
        return time.perf_counter() - t0

    def log_text(self):
        try:
            return (self.tmp / "sbxfs.log").read_text(errors="replace")
        except OSError:
            return ""

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            subprocess.run([str(sbxfs_binary()), "-u", str(self.mnt)], stderr=subprocess.DEVNULL)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], stderr=subprocess.DEVNULL)
        self.log.close()
        LIVE.discard(self)
        if not mounted(self.mnt):
            shutil.rmtree(self.tmp, ignore_errors=True)


def watchdog():
    print(f"bench_sandbox: still running after {WATCHDOG_SECONDS}s; killing the daemons",
          file=sys.stderr, flush=True)
    for m in list(LIVE):
        if m.proc is not None and m.proc.poll() is None:
            m.proc.kill()
    time.sleep(2)
    os.kill(os.getpid(), signal.SIGTERM)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--starts", type=int, default=5, help="mounts per isolation mode (5)")
    ap.add_argument("--runs", type=int, default=300, help="round trips per mode (300)")
    ap.add_argument("--warmup", type=int, default=20, help="round trips first (20)")
    args = ap.parse_args()
    binary = sbxfs_binary()
    if not os.access(binary, os.X_OK):
        sys.exit(f"no sbxfs binary at {binary} (meson compile -C build, or set SBXFS_BIN)")
    if os.geteuid() != 0:
        sys.exit("run as root: isolation bwrap needs it")
    timer = threading.Timer(WATCHDOG_SECONDS, watchdog)
    timer.daemon = True
    timer.start()
    modes = ("bwrap", "none")

    # (a) start time
    starts = {mode: [] for mode in modes}
    for _ in range(args.starts):
        for mode in modes:
            m = Mount(binary, mode)
            try:
                starts[mode].append(m.start() * 1000)
            finally:
                m.close()
    print(f"sbxfs: {binary}")
    print(f"(a) start: `sbxfs -f` until the first `echo true > cmd; cat exit` is read "
          f"({args.starts} mounts each)")
    med = {}
    for mode in modes:
        v = sorted(starts[mode])
        med[mode] = statistics.median(v)
        print(f"    isolation {mode:5}  median {med[mode]:7.1f} ms   min {v[0]:7.1f}   "
              f"max {v[-1]:7.1f}")
    print(f"    bwrap / none: {med['bwrap'] / med['none']:.2f}x "
          f"(+{med['bwrap'] - med['none']:.1f} ms)")

    # (b) round trip
    mounts = {mode: Mount(binary, mode) for mode in modes}
    try:
        for m in mounts.values():
            m.start()
        sessions = {}
        for mode, m in mounts.items():
            sessions[mode] = m.mnt / "sessions" / "bench"
            os.mkdir(sessions[mode])
        for _ in range(args.warmup):
            for mode in modes:
                round_trip(sessions[mode])
        samples = {mode: [] for mode in modes}
        for _ in range(args.runs):
            for mode in modes:
                t0 = time.perf_counter_ns()
                round_trip(sessions[mode])
                samples[mode].append((time.perf_counter_ns() - t0) / 1e6)
    finally:
        for m in mounts.values():
            m.close()
    print(f"(b) round trip `echo true > cmd; cat exit` ({args.runs} runs each, interleaved, "
          f"after {args.warmup} warm-up)")
    stats = {}
    for mode in modes:
        stats[mode] = med_p90(samples[mode])
        print(f"    isolation {mode:5}  median {stats[mode][0]:6.3f} ms   "
              f"p90 {stats[mode][1]:6.3f} ms")
    print(f"    bwrap / none: median {stats['bwrap'][0] / stats['none'][0]:.2f}x, "
          f"p90 {stats['bwrap'][1] / stats['none'][1]:.2f}x")
    timer.cancel()


if __name__ == "__main__":
    main()
