#!/usr/bin/python3
"""bench_speed.py: every figure of issue 16 next to its floor, with PASS/FAIL per target.

Mounts a fresh sbxfs in a temporary directory (binary: $SBXFS_BIN, else build/sbxfs of this
checkout; run as root for the bwrap floor) and measures, each figure the median of ROUNDS rounds
(a round's figure is the median of its samples; sbxfs and its floor interleaved in every round
so load changes hit both alike):

  exec       `echo true > cmd; cat exit` (open/write/close, read to EOF) against a round trip
             through a pipe to a live bash (`read l; echo x`), and against a fresh `bash -c true`
             (targets: <= 5x the pipe, <= 0.1x the fresh bash); and, for information, one FUSE
             round trip (stat of a control file: one GETATTR) times the EXEC_REQUESTS an exec
             needs, the least any exec through these files can cost
  handle     `echo hi` through a run handle (open cmd O_RDWR, write, read N, read runs/N/result)
             against the same pipe round trip (information, no target)
  stream     `head -c SIZE /dev/zero` read through stdout by `cat`, against
             `head -c SIZE /dev/zero | cat` (targets: >= 0.8x the pipe, max/min over rounds <= 1.5);
             and, for information, `head -c SIZE /dev/zero | cat > FILE` in the state directory:
             what spooling alone can take in, before any reader
  kill       `echo kill > ctl` on a `sleep 1000` until `exit` reads, against os.kill + waitpid
             of a plain child (target: <= 3x); and, for information (root), the same kill done
             as every group kill is (freeze the child's cgroup, signal, thaw, then waitpid)
  start      mkdir of a new session, `echo true > cmd; cat exit`, against a bare `bwrap ... true`
             with the sandbox's namespaces and mounts (target: <= 2x; bwrap isolation only)
  idle       the daemon's VmRSS with 1000 idle sessions, each shell up (target: <= 16 MiB)
  parallel   `sleep 0.1` in 100 sessions at once, from the first write of cmd to the last exit
             read (target: <= 0.5 s)

usage: tests/bench/bench_speed.py [--rounds N] [--size BYTES] [--sessions N] [--only NAME,...]
       [-- sbxfs args...]
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import (Mount, handle_exec, read_to_eof, sbxfs_binary, start_watchdog,  # noqa: E402
                       write_file)
from bench_exec import SbxKill, popen_kill  # noqa: E402

WATCHDOG_SECONDS = 600
# What an exec through the files costs at least: open cmd (GETATTR, OPEN), WRITE, FLUSH (the
# submit), open exit (GETATTR, OPEN), READ (answered at the exit), READ (EOF); RELEASEs are
# asynchronous. Checked against the daemon's -d log in tests/integration/test_fast_paths.py.
EXEC_REQUESTS = 8
MIB = 1 << 20
RESULTS = []


def now_ms():
    return time.perf_counter_ns() / 1e6


def timed(fn):
    t0 = now_ms()
    fn()
    return now_ms() - t0


def rounds_of(fns, rounds, per_round, warmup=3):
    """For each of fns: the list of per-round medians (ms), fns interleaved sample by sample."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    out = [[] for _ in fns]
    for _ in range(rounds):
        samples = [[] for _ in fns]
        for _ in range(per_round):
            for fn, s in zip(fns, samples):
                s.append(timed(fn))
        for s, o in zip(samples, out):
            o.append(statistics.median(s))
    return out


def report(name, value, unit, floor_name, floor, target, ok, note=""):
    RESULTS.append((name, ok))
    verdict = "info" if ok is None else ("PASS" if ok else "FAIL")
    ratio = value / floor if floor else float("nan")
    print(f"  {name:10} {value:10.3f} {unit:5} {floor_name:28} {floor:10.3f}  "
          f"ratio {ratio:7.3f}  {target:18} {verdict}{note}", flush=True)


class LiveBash:
    """A bash answering each line on its stdin with one line on its stdout."""

    def __init__(self):
        self.p = subprocess.Popen(["bash", "-c", "while read -r l; do echo x; done"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.w, self.r = self.p.stdin.fileno(), self.p.stdout.fileno()

    def round_trip(self):
        os.write(self.w, b"x\n")
        if os.read(self.r, 16) != b"x\n":
            raise RuntimeError("live bash: unexpected answer")

    def close(self):
        self.p.stdin.close()
        self.p.wait()
        self.p.stdout.close()


def bench_exec(sessions, args):
    sdir = sessions / "rt"
    os.mkdir(sdir)
    cmd, exitf = str(sdir / "cmd"), str(sdir / "exit")

    def sbx():
        write_file(cmd, b"true\n")
        if read_to_eof(exitf) != b"0\n":
            raise RuntimeError("`true` did not exit 0")

    def handle():
        handle_exec(sdir)

    def fresh():
        subprocess.run(["bash", "-c", "true"], check=True)

    def fuse_round_trip():
        os.stat(exitf)  # attributes of files are never cached: one GETATTR

    live = LiveBash()
    try:
        r_sbx, r_pipe, r_fresh, r_handle, r_fuse = rounds_of(
            [sbx, live.round_trip, fresh, handle, fuse_round_trip], args.rounds, args.per_round)
    finally:
        live.close()
    os.rmdir(sdir)
    sbx_m, pipe_m = statistics.median(r_sbx), statistics.median(r_pipe)
    fresh_m, handle_m = statistics.median(r_fresh), statistics.median(r_handle)
    report("exec", sbx_m, "ms", "pipe round trip, live bash", pipe_m, "<= 5x",
           sbx_m <= 5 * pipe_m)
    report("exec", sbx_m, "ms", "fresh bash -c true", fresh_m, "<= 0.1x",
           sbx_m <= 0.1 * fresh_m)
    report("handle", handle_m, "ms", "pipe round trip, live bash", pipe_m, "", None)
    fuse_m = EXEC_REQUESTS * statistics.median(r_fuse)
    report("exec>=", fuse_m, "ms", "pipe round trip, live bash", pipe_m, "", None,
           f"  ({EXEC_REQUESTS} FUSE round trips of {statistics.median(r_fuse) * 1000:.1f} us)")


def bench_stream(sessions, state_dir, args):
    size = args.size
    floor_file = state_dir / "bench-floor"
    n = [0]

    def sbx():
        n[0] += 1
        sdir = sessions / f"tp{n[0]}"
        os.mkdir(sdir)
        try:
            write_file(str(sdir / "cmd"), f"head -c {size} /dev/zero\n".encode())
            subprocess.run(["cat", str(sdir / "stdout")], stdout=subprocess.DEVNULL, check=True)
            if read_to_eof(str(sdir / "exit")) != b"0\n" or \
                    os.stat(sdir / "stdout").st_size != size:
                raise RuntimeError("head -c in a session failed")
        finally:
            os.rmdir(sdir)

    def pipe():
        subprocess.run(["bash", "-c", f"head -c {size} /dev/zero | cat > /dev/null"], check=True)

    def into_file():
        subprocess.run(["bash", "-c", f"head -c {size} /dev/zero | cat > {floor_file}"],
                       check=True)
        os.unlink(floor_file)

    r_sbx, r_pipe, r_file = rounds_of([sbx, pipe, into_file], args.rounds, 1, warmup=1)
    bps = [size / (t / 1000) / MIB for t in r_sbx]
    pps = [size / (t / 1000) / MIB for t in r_pipe]
    sbx_m, pipe_m = statistics.median(bps), statistics.median(pps)
    report("stream", sbx_m, "MiB/s", "head -c | cat", pipe_m, ">= 0.8x",
           sbx_m >= 0.8 * pipe_m, "  rounds " + " ".join(f"{v:.0f}" for v in bps))
    spread = max(bps) / min(bps)
    report("stream", spread, "x", "max/min over rounds", 1.0, "<= 1.5", spread <= 1.5)
    fps = statistics.median(size / (t / 1000) / MIB for t in r_file)
    report("stream<=", fps, "MiB/s", "head -c | cat", pipe_m, "", None,
           "  (head -c | cat > a file in the state dir)")


def bench_kill(sessions, daemon_pid, args):
    ks = SbxKill(sessions, "kill", daemon_pid)
    try:
        sbx_r, py_r = [], []
        for _ in range(args.rounds):
            s, p = [], []
            for _ in range(args.kill_per_round):  # each returns its own kill-to-exit ms
                s.append(ks.kill(b"kill\n", b"143\n"))
                p.append(popen_kill(signal.SIGTERM))
            sbx_r.append(statistics.median(s))
            py_r.append(statistics.median(p))
    finally:
        ks.close()
    sbx_m, py_m = statistics.median(sbx_r), statistics.median(py_r)
    report("kill", sbx_m, "ms", "kill + waitpid", py_m, "<= 3x", sbx_m <= 3 * py_m)
    frozen = frozen_kill_ms(args.rounds * args.kill_per_round)
    if frozen is not None:
        report("kill>=", frozen, "ms", "kill + waitpid", py_m, "", None,
               "  (freeze its cgroup, kill, thaw, waitpid)")


def freezer_group():
    """A new cgroup that can be frozen: (dir, state file, frozen test), or None."""
    v1 = "/sys/fs/cgroup/freezer"
    for root in (v1, "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        d = os.path.join(root, f"sbxfs-bench-{os.getpid()}")
        try:
            os.mkdir(d)
        except OSError:
            continue
        if root == v1:
            return d, "freezer.state", ("FROZEN", "THAWED"), lambda: read_text(
                d + "/freezer.state").startswith("FROZEN")
        if os.path.exists(d + "/cgroup.freeze"):
            return d, "cgroup.freeze", ("1", "0"), lambda: "frozen 1" in read_text(
                d + "/cgroup.events")
        os.rmdir(d)
    return None


def read_text(path):
    with open(path) as f:
        return f.read()


def frozen_kill_ms(n):
    """Median ms of a kill done as sbxfs kills a group, on a plain child: None if no cgroup
    can be frozen here (not root)."""
    group = freezer_group()
    if group is None:
        return None
    d, state, (freeze, thaw), is_frozen = group
    samples = []
    try:
        for _ in range(n):
            p = subprocess.Popen(["sleep", "1000"])
            write_file(d + "/cgroup.procs", str(p.pid).encode())
            t0 = time.perf_counter_ns()
            write_file(f"{d}/{state}", freeze.encode())
            while not is_frozen():
                pass
            os.kill(p.pid, signal.SIGTERM)
            write_file(f"{d}/{state}", thaw.encode())
            os.waitpid(p.pid, 0)
            samples.append((time.perf_counter_ns() - t0) / 1e6)
            p.returncode = -signal.SIGTERM
    finally:
        os.rmdir(d)
    return statistics.median(samples)


def bare_bwrap_argv():
    argv = ["bwrap", "--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--unshare-net", "--hostname", "sbxfs"]
    for name in ("usr", "bin", "lib", "lib64", "sbin", "etc"):
        path = "/" + name
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev",
             "--tmpfs", "/tmp", "--tmpfs", "/dev/shm", "--remount-ro", "/", "--", "true"]
    return argv


def drop_to_nobody():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def bench_start(sessions, args):
    n = [0]

    def sbx():
        n[0] += 1
        sdir = sessions / f"st{n[0]}"
        os.mkdir(sdir)
        write_file(str(sdir / "cmd"), b"true\n")
        if read_to_eof(str(sdir / "exit")) != b"0\n":
            raise RuntimeError("first `true` did not exit 0")

    argv = bare_bwrap_argv()

    def bare():
        subprocess.run(argv, check=True, preexec_fn=drop_to_nobody)

    r_sbx, r_bare = rounds_of([sbx, bare], args.rounds, args.start_per_round, warmup=1)
    for i in range(1, n[0] + 1):
        os.rmdir(sessions / f"st{i}")
    sbx_m, bare_m = statistics.median(r_sbx), statistics.median(r_bare)
    report("start", sbx_m, "ms", "bare bwrap ... true", bare_m, "<= 2x", sbx_m <= 2 * bare_m)


def vmrss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def bench_many(sessions, daemon_pid, args):
    names = [f"idle{i:04d}" for i in range(args.sessions)]
    rss0 = vmrss_kib(daemon_pid)
    t0 = time.monotonic()
    for name in names:
        os.mkdir(sessions / name)
    t_up = time.monotonic() - t0
    time.sleep(0.2)
    rss = vmrss_kib(daemon_pid)
    report("idle", rss / 1024, "MiB", f"daemon before ({len(names)} up)", rss0 / 1024,
           "<= 16 MiB", rss <= 16 * 1024, f"  (made in {t_up:.1f} s)")

    par = names[:100]
    cmds = [str(sessions / n / "cmd") for n in par]
    exits = [str(sessions / n / "exit") for n in par]

    def parallel():
        for c in cmds:
            write_file(c, b"sleep 0.1\n")
        for e in exits:
            if read_to_eof(e) != b"0\n":
                raise RuntimeError("sleep 0.1 did not exit 0")

    walls = rounds_of([parallel], args.rounds, 1, warmup=1)[0]
    wall = statistics.median(walls) / 1000
    report("parallel", wall, "s", "one sleep 0.1", 0.1, "<= 0.5 s", wall <= 0.5,
           "  rounds " + " ".join(f"{w / 1000:.3f}" for w in walls))
    t0 = time.monotonic()
    for name in names:
        os.rmdir(sessions / name)
    print(f"  ({len(names)} sessions removed in {time.monotonic() - t0:.1f} s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=60, help="exec samples per round")
    ap.add_argument("--kill-per-round", type=int, default=6)
    ap.add_argument("--start-per-round", type=int, default=6)
    ap.add_argument("--size", type=int, default=1 << 30, help="bytes streamed")
    ap.add_argument("--sessions", type=int, default=1000, help="idle sessions")
    ap.add_argument("--only", default="exec,stream,kill,start,many")
    ap.add_argument("sbxfs_args", nargs="*", help="more sbxfs arguments (after --)")
    args = ap.parse_args()
    only = set(args.only.split(","))

    binary = sbxfs_binary()
    if not os.access(binary, os.X_OK):
        sys.exit(f"no sbxfs binary at {binary} (build it, or set SBXFS_BIN)")
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"sbxfs speed benchmark ({binary}), {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, "
          f"load {load}, {os.cpu_count()} CPUs; medians of {args.rounds} rounds")
    print(f"  {'figure':10} {'value':>10} {'unit':5} {'floor':28} {'value':>10}  "
          f"{'ratio':>13}  {'target':18} verdict")
    t_start = time.monotonic()
    m = Mount(binary, extra=args.sbxfs_args)
    timer = start_watchdog(WATCHDOG_SECONDS, m.proc)
    try:
        sessions = m.mnt / "sessions"
        # the bare bwrap floor drops to nobody as sbxfs drops to its user: root only
        bwrap = "none" not in args.sbxfs_args and os.geteuid() == 0
        if "exec" in only:
            bench_exec(sessions, args)
        if "stream" in only:
            bench_stream(sessions, m.tmp / "state", args)
        if "kill" in only:
            bench_kill(sessions, m.proc.pid, args)
        if "start" in only and bwrap:
            bench_start(sessions, args)
        if "many" in only:
            bench_many(sessions, m.proc.pid, args)
    finally:
        timer.cancel()
        m.close()
    failed = [name for name, ok in RESULTS if ok is False]
    print(f"total {time.monotonic() - t_start:.1f} s; "
          + ("all targets met" if not failed else "FAIL: " + ", ".join(failed)))


if __name__ == "__main__":
    main()
