#!/usr/bin/python3
"""bench_fs.py: workspace/ in both of its modes against the native directory behind it, in
one run.

Mounts two fresh sbxfs (binary: $SBXFS_BIN, else build/sbxfs of this checkout), one whose
workspace/ is the kernel's mount of the backing directory ([workspace] mount = kernel, the
default as root) and one that serves it through FUSE (mount = fuse), both backed by directories
on the filesystem of --dir (default /var/tmp; --mkfs-gib N makes a fresh ext4 filesystem there
instead, so that earlier runs' deleted files do not slow inode allocation down), and runs every
test three times per round: in the kernel mount's workspace/w, in the FUSE mount's workspace/w,
and in a native directory n next to the backing directories (same filesystem), rotating which
goes first. The figure of each side is the median of its rounds; a ratio is side/native as a
speed (throughput tests: higher is better) or as a time (the others: lower is better), the
median over pairs of runs that had the same slot in their rounds.

  write       1 GiB sequential write, dd bs=1M conv=fsync (MB/s)
  read cold   that file read with dd bs=1M after sync + drop_caches (MB/s)
  read warm   the same read again, from the page cache (MB/s)
  create      10,000 files of 1 KiB: open(O_CREAT)+write+close (seconds)
  stat        stat() of each of them (seconds)
  unlink      unlink() of each of them (seconds)
  tar -x      extracting a 5,000-file source tree with its git repository (seconds)
  find        `find TREE | wc -l`, cold (after drop_caches) and warm (seconds)
  git status  `git status --porcelain` in that tree, cold and warm (seconds)

The small-file tests run a little C helper (compiled into a temporary directory with cc) so
that the timings are of system calls, not of Python. Needs root (drop_caches). Takes a few
minutes; unmounts at the end.

Targets: the kernel mount within 0.95 of native on every figure; the FUSE mode no slower than
the figures it had before the kernel mount existed (FUSE_BEFORE, from docs/performance.md).

usage: tests/bench/bench_fs.py [--rounds N] [--dir DIR] [--size-mib N] [--files N]
                               [--tree-files N] [--quick] [-- sbxfs args...]
"""

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WRITE_SETTLE = 5  # seconds between the 1 GiB writes

HELPER_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *op = argv[1], *dir = argv[2], *prefix = argc > 5 ? argv[5] : "f";
	int n = atoi(argv[3]), size = argc > 4 ? atoi(argv[4]) : 0, dfd;
	char name[64], *buf = calloc(1, size + 1);
	struct stat st;
	double t0;

	memset(buf, 'x', size);
	dfd = open(dir, O_PATH | O_DIRECTORY);
	if (dfd < 0) { perror(dir); return 1; }
	t0 = now();
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%06d", prefix, i);
		if (!strcmp(op, "create")) {
			int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || write(fd, buf, size) != size || close(fd) < 0) { perror(name); return 1; }
		} else if (!strcmp(op, "stat")) {
			if (fstatat(dfd, name, &st, 0) < 0) { perror(name); return 1; }
		} else if (!strcmp(op, "unlink")) {
			if (unlinkat(dfd, name, 0) < 0) { perror(name); return 1; }
		} else {
			fprintf(stderr, "bad op\n");
			return 2;
		}
	}
	printf("%.6f\n", now() - t0);
	return 0;
}
"""

WORDS = ("static int void return struct const char unsigned if else for while switch case "
         "break continue include define buffer length offset error value result count index "
         "node list table entry name path file read write open close lock state config").split()


def sbxfs_binary():
    env = os.environ.get("SBXFS_BIN")
    return Path(env).expanduser().resolve() if env else REPO / "build" / "sbxfs"


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, **kw).stdout.decode()


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed(fn):
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def dd_rate(args):
    """Runs dd; MB/s computed from its own byte count and our wall time."""
    t0 = time.monotonic()
    out = subprocess.run(["dd", *args], check=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE).stderr.decode()
    elapsed = time.monotonic() - t0
    nbytes = int(out.strip().splitlines()[-1].split()[0])
    return nbytes / elapsed / 1e6


class Mount:
    """An sbxfs in the given workspace mode; both mounts share one backing directory."""

    def __init__(self, base, ws, extra, mode):
        self.tmp = Path(tempfile.mkdtemp(prefix="sbxfs-bench-", dir=base))
        self.mnt, self.ws, self.state = self.tmp / "mnt", ws, self.tmp / "state"
        for d in (self.mnt, self.state):
            d.mkdir()
        conf = self.tmp / "sbxfs.ini"
        conf.write_text(f"[workspace]\nmount = {mode}\n")
        self.proc = subprocess.Popen(
            [str(sbxfs_binary()), "-f", "-c", str(conf), "--workspace", str(self.ws),
             "--state-dir", str(self.state), *extra, str(self.mnt)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.tmp / "daemon.log", "wb"), start_new_session=True)
        deadline = time.monotonic() + 15
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"sbxfs did not mount: {(self.tmp / 'daemon.log').read_text()}")
            time.sleep(0.05)
        while mode == "kernel" and not os.path.ismount(self.mnt / "workspace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"no kernel mount on workspace/: "
                         f"{(self.tmp / 'daemon.log').read_text()}")
            time.sleep(0.05)
        os.listdir(self.mnt / "workspace")
        self.side = self.mnt / "workspace" / mode
        self.side.mkdir()

    def stop(self):
        subprocess.run([str(sbxfs_binary()), "-u", str(self.mnt)], capture_output=True)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], capture_output=True)
        if not os.path.ismount(self.mnt) and not os.path.ismount(self.mnt / "workspace"):
            shutil.rmtree(self.tmp, ignore_errors=True)


class FreshExt4:
    """An ext4 filesystem made for the run: a sparse image in base, loop-mounted."""

    def __init__(self, base, gib):
        self.dir = Path(tempfile.mkdtemp(prefix="sbxfs-bench-fs-", dir=base))
        self.img, self.mnt = self.dir / "fs.img", self.dir / "mnt"
        self.mnt.mkdir()
        with open(self.img, "wb") as f:
            f.truncate(gib << 30)
        sh(f"mkfs.ext4 -q -F {self.img}")
        sh(f"mount -o loop {self.img} {self.mnt}")

    def remove(self):
        subprocess.run(["umount", str(self.mnt)], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def make_tree(root, nfiles, seed=4):
    """A source-like tree of nfiles text files (3 levels of directories) committed to git,
    with the objects packed, as a tarball path."""
    rnd = random.Random(seed)
    src = root / "tree"
    ndirs = max(1, nfiles // 25)
    dirs = []
    for i in range(ndirs):
        parts = [f"mod{i % 8}", f"pkg{(i // 8) % 5}", f"d{i}"]
        dirs.append(src.joinpath(*parts))
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    for i in range(nfiles):
        d = dirs[i % ndirs]
        size = min(int(rnd.lognormvariate(8.2, 1.0)), 65536)
        words = []
        n = 0
        while n < size:
            w = rnd.choice(WORDS)
            words.append(w)
            n += len(w) + 1
        (d / f"file{i}.c").write_text(" ".join(words)[:size] + "\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b")
    sh(f"cd {src} && git init -q && git add -A && git commit -qm tree && git gc -q", env=env)
    tarball = root / "tree.tar"
    sh(f"tar -cf {tarball} -C {src} .")
    shutil.rmtree(src)
    return tarball


def git_status(tree):
    subprocess.run(["git", "-c", f"safe.directory={tree}", "-C", str(tree), "status",
                    "--porcelain"], check=True, stdout=subprocess.DEVNULL)


def find_count(tree):
    sh(f"find {tree} | wc -l")


SIDES = ("kernel", "fuse", "native")


class Bench:
    def __init__(self, args, mounts, native, scratch):
        self.args = args
        self.mounts = mounts  # mode -> Mount
        self.native = native  # a directory on the same filesystem as the backing ones
        self.scratch = scratch
        self.results = {}  # name -> side -> [sample of round 0, 1, ...]
        self.helper = scratch / "fsops"
        (scratch / "fsops.c").write_text(HELPER_C)
        sh(f"cc -O2 -o {self.helper} {scratch / 'fsops.c'}")

    def sides(self, rnd):
        """(side, directory) in this round's order: each side goes first once every three
        rounds."""
        dirs = {mode: m.side for mode, m in self.mounts.items()}
        dirs["native"] = self.native
        k = rnd % len(SIDES)
        return [(side, dirs[side]) for side in SIDES[k:] + SIDES[:k]]

    def record(self, name, side, value):
        self.results.setdefault(name, {s: [] for s in SIDES})[side].append(value)

    def helper_run(self, op, d, n, size, prefix):
        return float(sh(f"{self.helper} {op} {d} {n} {size} {prefix}"))

    def big_file(self, rnd):
        count = self.args.size_mib
        for side, base in self.sides(rnd):
            f = base / "big.bin"
            os.sync()
            time.sleep(WRITE_SETTLE)  # the disk under a VM keeps flushing after fsync
            self.record("write 1 GiB (dd, fsync)", side,
                        dd_rate(["if=/dev/zero", f"of={f}", "bs=1M", f"count={count}",
                                 "conv=fsync"]))
        for side, base in self.sides(rnd):
            f = base / "big.bin"
            drop_caches()
            self.record("read cold", side, dd_rate([f"if={f}", "of=/dev/null", "bs=1M"]))
            dd_rate([f"if={f}", "of=/dev/null", "bs=1M"])  # makes sure all of it is cached
            self.record("read warm", side, dd_rate([f"if={f}", "of=/dev/null", "bs=1M"]))
        for side, base in self.sides(rnd):
            (base / "big.bin").unlink()

    def small_files(self, rnd):
        """Both sides in one directory (names w* through the mount, n* natively), so that
        both get the same block group of the backing filesystem: ext4's inode allocator
        slows down in a group full of recently deleted inodes."""
        n = self.args.files
        shared = self.native.parent / "many"
        shared.mkdir()
        os.sync()
        for op, name in (("create", "create 10k files"), ("stat", "stat 10k files"),
                         ("unlink", "unlink 10k files")):
            for side, _ in self.sides(rnd):
                d = shared if side == "native" else self.mounts[side].mnt / "workspace" / "many"
                self.record(name, side, self.helper_run(op, d, n, 1024, side[0]))
        shared.rmdir()

    def tree(self, rnd, tarball):
        for side, base in self.sides(rnd):
            d = base / "tree"
            if d.exists():
                shutil.rmtree(d)
            drop_caches()
            d.mkdir()
            self.record("tar -x 5k-file tree", side,
                        timed(lambda: sh(f"tar -xf {tarball} -C {d}")))
            git_status(d)  # refreshes the index once: stat data of the new files
        for side, base in self.sides(rnd):
            d = base / "tree"
            drop_caches()
            self.record("find | wc -l, cold", side, timed(lambda: find_count(d)))
            self.record("find | wc -l, warm", side, timed(lambda: find_count(d)))
        for side, base in self.sides(rnd):
            d = base / "tree"
            drop_caches()
            self.record("git status, cold", side, timed(lambda: git_status(d)))
            git_status(d)
            self.record("git status, warm", side, timed(lambda: git_status(d)))


# name -> kind: "rate" = higher is better, "time" = lower is better.
KINDS = {
    "write 1 GiB (dd, fsync)": "rate",
    "read cold": "rate",
    "read warm": "rate",
    "create 10k files": "time",
    "stat 10k files": "time",
    "unlink 10k files": "time",
    "tar -x 5k-file tree": "time",
    "find | wc -l, cold": "time",
    "find | wc -l, warm": "time",
    "git status, cold": "time",
    "git status, warm": "time",
}
KERNEL_TARGET = 0.95  # speed relative to native: rate ratio >= it, time ratio <= 1/it
# The FUSE workspace's ratios to native before the kernel mount existed (docs/performance.md,
# ext4, 2 CPUs).
FUSE_BEFORE = {
    "write 1 GiB (dd, fsync)": 0.98, "read cold": 0.97, "read warm": 1.02,
    "create 10k files": 5.8, "stat 10k files": 19, "unlink 10k files": 5.8,
    "tar -x 5k-file tree": 8.2, "find | wc -l, cold": 2.8, "find | wc -l, warm": 2.9,
    "git status, cold": 3.0, "git status, warm": 1.8,
}


def slot(side, rnd):
    """The place of side among the runs of round rnd (see Bench.sides)."""
    return (SIDES.index(side) - rnd) % len(SIDES)


def paired_ratio(results, name, side):
    """Median of side/native over samples that ran in the same slot of their rounds. Rounds
    rotate the order of the three sides (Bench.sides), and on a VM a run's place among
    back-to-back runs changes it (the host's disk and caches), so side's sample of round r is
    paired with native's sample of the round of the same cycle of three in which native had
    that slot."""
    mine, nat = results[name][side], results[name]["native"]
    n = min(len(mine), len(nat))
    whole = n - n % len(SIDES)
    if whole == 0:
        return statistics.median(mine[:n]) / statistics.median(nat[:n])
    pairs = []
    for r in range(whole):
        base = r - r % len(SIDES)
        r2 = next(base + i for i in range(len(SIDES))
                  if slot("native", base + i) == slot(side, r))
        pairs.append(mine[r] / nat[r2])
    return statistics.median(pairs)


def verdict(kind, ratio_, target):
    if kind == "rate":
        return f">= {target:.2f} {'met' if ratio_ >= target else 'MISSED'}"
    return f"<= {target:.2f} {'met' if ratio_ <= target else 'MISSED'}"


def report(results, verbose=False):
    print()
    print(f"{'test':26} {'kernel':>10} {'fuse':>10} {'native':>10} {'kernel/n':>9} "
          f"{'target':>15} {'fuse/n':>8} {'before':>17}")
    for name, kind in KINDS.items():
        if name not in results:
            continue
        med = {side: statistics.median(results[name][side]) for side in SIDES}
        k, f = paired_ratio(results, name, "kernel"), paired_ratio(results, name, "fuse")
        ktarget = KERNEL_TARGET if kind == "rate" else 1 / KERNEL_TARGET
        fmt = "{:8.0f}MB" if kind == "rate" else "{:9.3f}s"
        cells = " ".join(fmt.format(med[side]) + " " for side in SIDES)
        print(f"{name:26} {cells}{k:8.2f}x {verdict(kind, k, ktarget):>15} {f:7.2f}x "
              f"{verdict(kind, f, FUSE_BEFORE[name]):>17}")
    print()
    print("ratio: the side over native (median over runs in the same slot of a round); for "
          "MB/s higher is better, for seconds lower is. before: the FUSE mode's ratio before "
          "the kernel mount.")
    if verbose:
        print()
        for name, sides in results.items():
            print(f"{name:26} " + " ".join(
                f"{side} {['%.3g' % v for v in sides[side]]}" for side in SIDES))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds; a multiple of 3, so that each side has each place as often "
                         "(a run's place among back-to-back runs changes it)")
    ap.add_argument("--dir", default="/var/tmp", help="where the backing directory goes")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--tree-files", type=int, default=5000)
    ap.add_argument("--quick", action="store_true", help="1 round, 256 MiB (a smoke test)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every sample too")
    ap.add_argument("--only", default="", help="comma list of: big,small,tree")
    ap.add_argument("--mkfs-gib", type=int, default=0,
                    help="run on a fresh ext4 filesystem of this size (a loop-mounted image "
                         "in --dir) instead of --dir itself")
    ap.add_argument("extra", nargs="*", help="extra sbxfs arguments (after --)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.size_mib = 3, 256
    if os.geteuid() != 0:
        sys.exit("bench_fs.py needs root (drop_caches)")
    extra = args.extra or ["--isolation", "none"]
    fresh = None
    if args.mkfs_gib:
        fresh = FreshExt4(args.dir, args.mkfs_gib)
        args.dir = str(fresh.mnt)
    scratch = Path(tempfile.mkdtemp(prefix="sbxfs-bench-scratch-", dir=args.dir))
    backing = Path(tempfile.mkdtemp(prefix="sbxfs-bench-ws-", dir=args.dir))
    native = backing / "native"
    native.mkdir()
    mounts = {}
    for mode in ("kernel", "fuse"):
        mounts[mode] = Mount(args.dir, backing, extra, mode)

    def kill_all():
        for m in mounts.values():
            os.killpg(m.proc.pid, signal.SIGKILL)
    killer = threading.Timer(3600, kill_all)
    killer.daemon = True
    killer.start()
    try:
        b = Bench(args, mounts, native, scratch)
        only = set(args.only.split(",")) if args.only else {"big", "small", "tree"}
        tarball = make_tree(scratch, args.tree_files) if "tree" in only else None
        print(f"sbxfs {sbxfs_binary()} {' '.join(extra)}; backing dir {backing} "
              f"({sh(f'stat -f -c %T {backing}').strip()}); {args.rounds} rounds", flush=True)
        for rnd in range(args.rounds):
            if "big" in only:
                b.big_file(rnd)
            if "small" in only:
                b.small_files(rnd)
            if "tree" in only:
                b.tree(rnd, tarball)
            print(f"round {rnd + 1} done", flush=True)
        report(b.results, args.verbose)
    finally:
        killer.cancel()
        for m in mounts.values():
            m.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(backing, ignore_errors=True)
        if fresh:
            fresh.remove()


if __name__ == "__main__":
    main()
