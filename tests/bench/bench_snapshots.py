#!/usr/bin/python3
"""bench_snapshots.py: what a snapshot and a restore of a workspace cost, on both kinds of
filesystem, against the copy a user would make otherwise.

Mounts a fresh sbxfs for each kind (binary: $SBXFS_BIN, else build/sbxfs of this checkout):

  copy:     the workspace on this machine's filesystem (ext4 here) and the snapshots in the
            state dir: every snapshot is a copy;
  reflink:  [sandbox] workspace_max with workspace_fs = xfs (root, mkfs.xfs): the workspace and
            its snapshots in one XFS image, every snapshot made of reflinks.

Fills the workspace with FILES files (default 10,000) of MB megabytes together (default 500, in
100 directories, incompressible), then measures, each the median of RUNS (default 3):

  take:            `mkdir snapshots/N` until it returns, of a workspace at rest (nothing
                   changed in the second before: what changed then is copied again while the
                   sandbox is frozen), and the status's frozen_ms (how long the sandbox stood
                   still) and space (what it took);
  cp -a:           `cp -a` of the workspace to a directory of the same filesystem (the copy a
                   snapshot replaces; cp --reflink=auto on XFS);
  restore, 10 changed: `echo restore > ctl` after 10 files changed (the others are kept);
  restore, all gone:   the same after `rm -rf` of everything;
  archive:         reading snapshots/N/archive (plain tar) to its end, in MB/s.

Prints the figures and the ratios in one run. Takes about two minutes (a watchdog kills the
daemon if a step hangs).

usage: tests/bench/bench_snapshots.py [--files N] [--mb N] [--runs N] [--kinds copy,reflink]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import Mount, read_to_eof, sbxfs_binary, start_watchdog  # noqa: E402

WATCHDOG_SECONDS = 600


def fill(ws, nfiles, total):
    """nfiles incompressible files of total bytes together, in directories of nfiles/100."""
    per = total // nfiles
    block = os.urandom(per + 4096)
    for i in range(nfiles):
        d = ws / f"d{i % 100:02}"
        if i < 100:
            d.mkdir(exist_ok=True)
        with open(d / f"f{i:05}", "wb") as f:
            f.write(block[i % 4096:i % 4096 + per])


def status(mnt, name):
    text = (mnt / "snapshots" / name / "status").read_text()
    return dict(line.split(" ", 1) for line in text.splitlines())


def timed(fn):
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def restore(mnt, name):
    fd = os.open(mnt / "snapshots" / name / "ctl", os.O_WRONLY)
    try:
        os.write(fd, b"restore\n")
    finally:
        os.close(fd)


def same_tree(a, b):
    res = subprocess.run(["diff", "-rq", "--no-dereference", str(a), str(b)],
                         capture_output=True)
    if res.returncode:
        sys.exit(f"{a} and {b} differ:\n{res.stdout.decode()[:2000]}")


def drop_caches():
    """Reads come from disk for every kind alike (root only; otherwise warm for all)."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        pass


def bench_kind(kind, args):
    extra = []
    if kind == "reflink":
        conf = Path(f"/tmp/sbxfs-bench-snap-{os.getpid()}.ini")
        conf.write_text(f"[sandbox]\nworkspace_max = {max(2048, args.mb * 4)}M\n"
                        "workspace_fs = xfs\n[snapshots]\nspace_max = max\nmax = 1000\n")
        extra = ["-c", str(conf)]
    else:
        conf = Path(f"/tmp/sbxfs-bench-snap-{os.getpid()}.ini")
        conf.write_text("[snapshots]\nspace_max = max\nmax = 1000\n")
        extra = ["-c", str(conf)]
    m = Mount(sbxfs_binary(), extra=extra)
    dog = start_watchdog(WATCHDOG_SECONDS, m.proc)
    out = {}
    try:
        fill(m.ws, args.files, args.mb << 20)
        cp_times, take_times, took, frozen, space = [], [], [], [], []
        small, full, arch = [], [], []
        for run in range(args.runs):
            dst = m.ws.parent / f"cp{run}" if kind == "copy" else m.ws / f".cp{run}"
            if kind == "reflink":  # cp within the image, where reflinks are
                dst = m.tmp / "state" / "image" / f"cp{run}"
            drop_caches()
            cp_times.append(timed(lambda: subprocess.run(
                ["cp", "-a", "--reflink=auto", str(m.ws), str(dst)], check=True)))
            shutil.rmtree(dst)
            name = f"r{run}"
            drop_caches()
            time.sleep(1.1)  # a workspace at rest: nothing changed in the last second
            take_times.append(timed(lambda: os.mkdir(m.mnt / "snapshots" / name)))
            st = status(m.mnt, name)
            took.append(int(st["took_ms"]))
            frozen.append(int(st["frozen_ms"]))
            space.append(int(st["space"]))
            for i in range(10):
                (m.ws / f"d{i:02}" / f"f{i:05}").write_bytes(b"changed")
            small.append(timed(lambda: restore(m.mnt, name)))
            for d in list(m.ws.iterdir()):
                shutil.rmtree(d)
            drop_caches()
            full.append(timed(lambda: restore(m.mnt, name)))
            same_tree(m.mnt / "snapshots" / name / "files", m.ws)
            t = timed(lambda: read_to_eof(m.mnt / "snapshots" / name / "archive"))
            arch.append(args.mb / t)
        out = {
            "take_s": statistics.median(take_times), "took_ms": statistics.median(took),
            "frozen_ms": statistics.median(frozen), "space_mb": statistics.median(space) / 2**20,
            "cp_s": statistics.median(cp_times), "restore_small_s": statistics.median(small),
            "restore_full_s": statistics.median(full), "archive_mbs": statistics.median(arch),
        }
    finally:
        dog.cancel()
        m.close()
        conf.unlink(missing_ok=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kinds", default="copy,reflink")
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    if "reflink" in kinds and (os.geteuid() != 0 or not shutil.which("mkfs.xfs")):
        print("reflink: skipped (needs root and mkfs.xfs, xfsprogs)")
        kinds.remove("reflink")
    res = {k: bench_kind(k, args) for k in kinds}
    print(f"workspace: {args.files} files, {args.mb} MB; median of {args.runs} runs")
    print(f"{'':24}" + "".join(f"{k:>12}" for k in kinds))
    rows = [("take (mkdir), s", "take_s", "{:.3f}"), ("  of which frozen, ms", "frozen_ms",
                                                      "{:.0f}"),
            ("  space taken, MB", "space_mb", "{:.1f}"), ("cp -a, s", "cp_s", "{:.3f}"),
            ("restore, 10 changed, s", "restore_small_s", "{:.3f}"),
            ("restore, all gone, s", "restore_full_s", "{:.3f}"),
            ("archive read, MB/s", "archive_mbs", "{:.0f}")]
    for label, key, fmt in rows:
        print(f"{label:24}" + "".join(f"{fmt.format(res[k][key]):>12}" for k in kinds))
    for k in kinds:
        print(f"{k}: take / cp -a = {res[k]['take_s'] / res[k]['cp_s']:.2f}; "
              f"restore (10 changed) / take = {res[k]['restore_small_s'] / res[k]['take_s']:.2f}")
    if len(kinds) == 2:
        print(f"copy / reflink: take {res['copy']['take_s'] / res['reflink']['take_s']:.1f}x, "
              f"full restore {res['copy']['restore_full_s'] / res['reflink']['restore_full_s']:.1f}x")


if __name__ == "__main__":
    main()
