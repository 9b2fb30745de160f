#!/usr/bin/python3
"""bench_session.py: what a session costs, in time and in memory.

Mounts a fresh sbxfs in a temporary directory (binary: $SBXFS_BIN, else build/sbxfs of this
checkout), then measures in one run:

  (a) the round trip of `echo true > cmd; cat exit` (open/write/close cmd, then read exit to
      EOF, with plain os calls), against starting `bash -c true` fresh with subprocess:
      median and p90 of N runs after a warm-up, and their ratio;
  (b) one exec with its whole result, `echo hi`: through a run handle (open cmd O_RDWR, write,
      read N, read runs/N/result to EOF) against the classic files (write cmd and close,
      read stdout, stderr and exit), each as a ratio to the fresh bash of (a);
  (c) the daemon's RSS (VmRSS of the sbxfs process) before and after creating 100 idle
      sessions (mkdir, then one `true` through each, so every shell is up), and, for
      information, the total RSS of the daemon's descendants (launcher and session shells).

Unmounts at the end. Takes a few seconds; a watchdog kills the daemon if a step hangs.

usage: tests/bench/bench_session.py [--runs N] [--warmup N] [--sessions N]
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import Mount, descendants, handle_exec, med_p90, read_to_eof, sbxfs_binary, \
    start_watchdog, write_file  # noqa: E402

WATCHDOG_SECONDS = 240


def vmrss_kib(pid):
    """VmRSS of pid in KiB, or 0 if it is gone (or a zombie, which has none)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def timings(fns, runs, warmup):
    """Median and p90 (ms) of each of fns, run interleaved so load changes hit all alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples = [[] for _ in fns]
    for _ in range(runs):
        for fn, out in zip(fns, samples):
            t0 = time.perf_counter_ns()
            fn()
            out.append((time.perf_counter_ns() - t0) / 1e6)
    return [med_p90(out) for out in samples]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--sessions", type=int, default=100)
    args = ap.parse_args()

    binary = sbxfs_binary()
    if not os.access(binary, os.X_OK):
        sys.exit(f"no sbxfs binary at {binary} (build it, or set SBXFS_BIN)")
    t_start = time.monotonic()
    m = Mount(binary)
    timer = start_watchdog(WATCHDOG_SECONDS, m.proc)
    try:
        pid = m.proc.pid
        sessions = m.mnt / "sessions"

        # (a) round trip of one command vs. a fresh bash
        sdir = sessions / "bench"
        os.mkdir(sdir)
        cmd, exitf = str(sdir / "cmd"), str(sdir / "exit")

        def roundtrip():
            write_file(cmd, b"true\n")
            status = read_to_eof(exitf)
            if status != b"0\n":
                raise RuntimeError(f"`true` in a session exited with {status!r}")

        def fresh_bash():
            subprocess.run(["bash", "-c", "true"], check=True)

        def run_handle():
            handle_exec(sdir)

        def classic_exec():
            write_file(cmd, b"echo hi")
            out = read_to_eof(str(sdir / "stdout"))
            read_to_eof(str(sdir / "stderr"))
            if out != b"hi\n" or read_to_eof(exitf) != b"0\n":
                raise RuntimeError(f"`echo hi` gave {out!r}")

        (sbx_med, sbx_p90), (bash_med, bash_p90), (h_med, h_p90), (c_med, c_p90) = timings(
            [roundtrip, fresh_bash, run_handle, classic_exec], args.runs, args.warmup)
        os.rmdir(sdir)

        # (c) memory of idle sessions
        time.sleep(0.2)
        rss_before = vmrss_kib(pid)
        kids_before = descendants(pid)
        rss_kids_before = sum(vmrss_kib(p) for p in kids_before)
        names = [f"idle{i:03d}" for i in range(args.sessions)]
        t0 = time.monotonic()
        for n in names:
            os.mkdir(sessions / n)
        for n in names:
            write_file(str(sessions / n / "cmd"), b"true\n")
        for n in names:
            status = read_to_eof(str(sessions / n / "exit"))
            if status != b"0\n":
                raise RuntimeError(f"session {n}: `true` exited with {status!r}")
        t_up = time.monotonic() - t0
        time.sleep(0.2)
        rss_after = vmrss_kib(pid)
        kids_after = descendants(pid)
        rss_kids_after = sum(vmrss_kib(p) for p in kids_after)
        t0 = time.monotonic()
        for n in names:
            os.rmdir(sessions / n)
        t_down = time.monotonic() - t0
        time.sleep(0.2)
        rss_removed = vmrss_kib(pid)
        kids_removed = descendants(pid)
        rss_kids_removed = sum(vmrss_kib(p) for p in kids_removed)
    finally:
        timer.cancel()
        m.close()

    n = args.sessions
    print(f"sbxfs session benchmark ({binary})")
    print()
    print(f"(a) round trip, {args.runs} runs each after {args.warmup} warm-up, interleaved, ms")
    print(f"    {'':34} {'median':>8} {'p90':>8}")
    print(f"    {'echo true > cmd; cat exit':34} {sbx_med:8.3f} {sbx_p90:8.3f}")
    print(f"    {'bash -c true (fresh process)':34} {bash_med:8.3f} {bash_p90:8.3f}")
    print(f"    {'ratio sbxfs / fresh bash':34} {sbx_med / bash_med:8.2f} {sbx_p90 / bash_p90:8.2f}")
    print(f"    (a command in a session costs {sbx_med / bash_med:.2f}x starting a fresh bash)")
    print()
    print("(b) one exec with its result (`echo hi`), same runs, ms; ratio to the fresh bash")
    print(f"    {'':34} {'median':>8} {'p90':>8} {'ratio':>8}")
    print(f"    {'handle: cmd r+, N, runs/N/result':34} {h_med:8.3f} {h_p90:8.3f}"
          f" {h_med / bash_med:8.2f}")
    print(f"    {'files: cmd, stdout, stderr, exit':34} {c_med:8.3f} {c_p90:8.3f}"
          f" {c_med / bash_med:8.2f}")
    print(f"    (the handle takes {h_med / c_med:.2f}x the time of the four files)")
    print()
    print(f"(c) memory, {n} idle sessions (created and each ran `true` in {t_up:.2f} s;"
          f" removed in {t_down:.2f} s)")
    print(f"    {'':34} {'before':>10} {'with ' + str(n):>10} {'removed':>10}")
    print(f"    {'sbxfs daemon VmRSS, KiB':34} {rss_before:10} {rss_after:10} {rss_removed:10}")
    print(f"    {'descendant processes':34} {len(kids_before):10} {len(kids_after):10}"
          f" {len(kids_removed):10}")
    print(f"    {'descendants VmRSS total, KiB':34} {rss_kids_before:10} {rss_kids_after:10}"
          f" {rss_kids_removed:10}")
    print(f"    daemon growth per session: {(rss_after - rss_before) / n:.1f} KiB;"
          f" shells: {(rss_kids_after - rss_kids_before) / n:.0f} KiB each"
          " (VmRSS counts shared pages in every process)")
    print()
    print(f"total time {time.monotonic() - t_start:.1f} s")


if __name__ == "__main__":
    main()
