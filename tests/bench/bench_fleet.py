#!/usr/bin/python3
"""bench_fleet.py: create-to-first-command of a fleet's sandboxes (issue 31), against a bare
mount measured in the same run, with PASS/FAIL per target.

As root, with $SBXFS_BIN (else build/sbxfs of this checkout) and sbxfs-fleet next to it:

  bare        a bare sbxfs on a fresh state directory (started as a daemon: it returns once
              mounted), then `echo ok > sessions/default/cmd; cat exit` (information: the floor)
  sequential  COUNT creates one after another: `mkdir FLEET/ID`, then the same command in it
              (targets: median <= 80 ms, p95 <= 150 ms, and median <= 2x the bare mount's)
  parallel    PARALLEL creates at once, each a thread doing the same (target: all ready
              within 1 s)

  wake        WAKE sandboxes of another fleet, whose sandboxes sleep after 1 s idle: each made,
              a first command, then once it sleeps the same command again, timed from the
              write to cmd (target: median <= 50 ms)

The peers' published
medians (100 sequential creates, an independent benchmark): Daytona 186 ms, E2B 491 ms, Vercel
671 ms, Modal 1.7 s, Cloudflare 2.1 s.

usage: tests/bench/bench_fleet.py [--count N] [--parallel N] [--bare N] [--wake N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SBXFS = Path(os.environ.get("SBXFS_BIN", REPO / "build" / "sbxfs")).resolve()
FLEET = SBXFS.parent / "sbxfs-fleet"


def first_command(mnt):
    s = Path(mnt) / "sessions" / "default"
    with open(s / "cmd", "w") as f:
        f.write("echo ok\n")
    with open(s / "exit") as f:
        assert f.read() == "0\n"


def bare(tmp, i):
    d = Path(tmp) / f"bare{i}"
    for sub in ("ws", "state", "mnt"):
        (d / sub).mkdir(parents=True)
    start = time.monotonic()
    subprocess.run([str(SBXFS), "--workspace", str(d / "ws"), "--state-dir", str(d / "state"),
                    str(d / "mnt")], check=True, capture_output=True)
    first_command(d / "mnt")
    took = time.monotonic() - start
    subprocess.run([str(SBXFS), "-u", "-z", str(d / "mnt")], capture_output=True)
    return took


class Fleet:
    """A fleet in tmp/NAME, up once its status answers; stopped on leaving."""

    def __init__(self, tmp, name, *args):
        self.mnt, state = Path(tmp) / name, Path(tmp) / f"{name}-state"
        self.proc = subprocess.Popen([str(FLEET), "--state-dir", str(state), *args,
                                      str(self.mnt)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self):
        deadline = time.monotonic() + 20
        while not (self.mnt / "status").exists():
            if time.monotonic() > deadline:
                sys.exit("the fleet did not mount")
            time.sleep(0.02)
        return self.mnt

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=120)


def state_of(mnt, id):
    return (mnt / id / "status").read_text().split("\n")[0].split(" ")[1]


def wakes(tmp, count):
    """Wake-to-first-command of count sandboxes, in ms."""
    ini = Path(tmp) / "sleepy.ini"
    ini.write_text("[sandbox]\nsleep_after = 1\n")
    took = []
    with Fleet(tmp, "sleepy", "--sandbox-config", str(ini)) as mnt:
        for i in range(count):
            os.mkdir(mnt / f"w{i}")
            first_command(mnt / f"w{i}" / "fs")
        for i in range(count):
            deadline = time.monotonic() + 30
            while state_of(mnt, f"w{i}") != "sleeping":
                if time.monotonic() > deadline:
                    sys.exit(f"w{i} did not sleep")
                time.sleep(0.05)
            start = time.monotonic()
            first_command(mnt / f"w{i}" / "fs")
            took.append((time.monotonic() - start) * 1000)
    return took


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def report(name, value, target, ok):
    print(f"{name:<34} {value:>10}   target {target:<22} {'PASS' if ok else 'FAIL'}")
    return ok


def created(mnt, args):
    """Sequential creates (ms each), then the time until all parallel ones were ready (s)."""
    seq = []
    for i in range(args.count):
        start = time.monotonic()
        os.mkdir(mnt / f"s{i}")
        first_command(mnt / f"s{i}" / "fs")
        seq.append((time.monotonic() - start) * 1000)
    done, errs = [], []

    def one(i):
        try:
            os.mkdir(mnt / f"p{i}")
            first_command(mnt / f"p{i}" / "fs")
            done.append(time.monotonic())
        except Exception as e:  # noqa: BLE001 - counted as a failure below
            errs.append(e)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(args.parallel)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    par = (max(done) - start) if done and not errs else float("inf")
    return seq, par


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--parallel", type=int, default=20)
    ap.add_argument("--bare", type=int, default=15)
    ap.add_argument("--wake", type=int, default=10)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_fleet.py: run as root (a fleet's sandboxes are root's mounts)")
    tmp = tempfile.mkdtemp(prefix="sbxfs-bench-fleet-")
    bare_ms = [bare(tmp, i) * 1000 for i in range(args.bare)]
    try:
        with Fleet(tmp, "fleet", "--max", str(args.count + args.parallel)) as mnt:
            seq, par = created(mnt, args)
        wake_ms = wakes(tmp, args.wake)
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", tmp], capture_output=True)
    b, m, p95 = statistics.median(bare_ms), statistics.median(seq), pct(seq, 95)
    w = statistics.median(wake_ms)
    print(f"bare mount, median of {args.bare}: {b:.0f} ms (p95 {pct(bare_ms, 95):.0f} ms)")
    ok = all([
        report(f"sequential median ({args.count})", f"{m:.0f} ms", "<= 80 ms", m <= 80),
        report(f"sequential p95 ({args.count})", f"{p95:.0f} ms", "<= 150 ms", p95 <= 150),
        report("sequential median / bare median", f"{m / b:.2f}x", "<= 2x", m / b <= 2),
        report(f"{args.parallel} at once, all ready", f"{par * 1000:.0f} ms", "<= 1000 ms",
               par <= 1.0),
        report(f"wake median ({args.wake})", f"{w:.0f} ms", "<= 50 ms", w <= 50),
    ])
    print(f"wake p95: {pct(wake_ms, 95):.0f} ms")
    print("peers' published medians: Daytona 186 ms, E2B 491 ms, Vercel 671 ms, Modal 1.7 s, "
          "Cloudflare 2.1 s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
