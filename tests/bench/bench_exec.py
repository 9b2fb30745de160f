#!/usr/bin/python3
"""bench_exec.py: how fast output streams out of a session, and how fast a kill lands.

Mounts a fresh sbxfs in a temporary directory (binary: $SBXFS_BIN, else build/sbxfs of this
checkout), then measures in one run:

  (a) stdout throughput: a session runs `head -c 1G /dev/zero` while the real `cat` binary
      reads its stdout file to /dev/null; timed from submitting the command until cat ends.
      Baseline: `head -c 1G /dev/zero | cat > /dev/null` under bash -c. Median of N runs each
      (interleaved), in bytes/s, and the ratio. Each sbxfs run gets its own session, removed
      after it, so the 1 GiB spool files do not pile up in the run history.
  (b) kill latency: a session runs `sleep 1000`; once status says `run_state running` and the
      sleep process exists, the time from `echo kill > ctl` (open, write, close) until a read of
      `exit` returns. Baseline: `sleep 1000` started with subprocess.Popen, then
      os.kill(pid, SIGTERM) and waitpid. Median and p90 of N runs each, and the ratios.
  (c) the same with `echo 'kill KILL' > ctl`, against SIGKILL and waitpid.

Unmounts at the end. Takes well under a minute; a watchdog kills the daemon if a step hangs.

usage: tests/bench/bench_exec.py [--size BYTES] [--tp-runs N] [--kill-runs N] [--warmup N]
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import Mount, descendants, med_p90, read_to_eof, sbxfs_binary, \
    start_watchdog, write_file  # noqa: E402

WATCHDOG_SECONDS = 170
GIB = 1 << 30


def status_of(sdir):
    """The session's status file as a dict of key -> value (both str)."""
    out = {}
    for line in read_to_eof(str(sdir / "status")).decode().splitlines():
        key, _, value = line.partition(" ")
        out[key] = value
    return out


def find_process(root, argv):
    """Pid of a live (not zombie) descendant of root running exactly argv, or None."""
    want = b"".join(a.encode() + b"\0" for a in argv)
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() != want:
                    continue
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            return pid
    return None


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


# (a) throughput

def sbx_stream(sessions, name, size):
    """Seconds from submitting `head -c SIZE /dev/zero` until `cat stdout > /dev/null` ends."""
    sdir = sessions / name
    os.mkdir(sdir)
    try:
        cmd = f"head -c {size} /dev/zero\n".encode()
        t0 = time.perf_counter_ns()
        write_file(str(sdir / "cmd"), cmd)
        subprocess.run(["cat", str(sdir / "stdout")], stdout=subprocess.DEVNULL, check=True)
        elapsed = (time.perf_counter_ns() - t0) / 1e9
        status = read_to_eof(str(sdir / "exit"))
        got = os.stat(sdir / "stdout").st_size
        if status != b"0\n" or got != size:
            raise RuntimeError(f"head -c {size} in a session: exit {status!r}, {got} bytes")
    finally:
        os.rmdir(sdir)  # frees its spool now, rather than keeping it in the run history
    return elapsed


def pipe_stream(size):
    t0 = time.perf_counter_ns()
    subprocess.run(["bash", "-c", f"head -c {size} /dev/zero | cat > /dev/null"], check=True)
    return (time.perf_counter_ns() - t0) / 1e9


# (b), (c) kill latency

class SbxKill:
    """One session that runs `sleep 1000` and gets it killed through ctl."""

    def __init__(self, sessions, name, daemon_pid):
        self.sdir = sessions / name
        self.daemon_pid = daemon_pid
        os.mkdir(self.sdir)

    def start_sleep(self):
        write_file(str(self.sdir / "cmd"), b"sleep 1000\n")
        deadline = time.monotonic() + 10
        while True:
            if status_of(self.sdir).get("run_state") == "running":
                pid = find_process(self.daemon_pid, ["sleep", "1000"])
                if pid:
                    return pid
            if time.monotonic() > deadline:
                raise RuntimeError("`sleep 1000` in a session did not start within 10 s")
            time.sleep(0.002)

    def kill(self, verb, want):
        """ms from `echo VERB > ctl` until `cat exit` returns; checks the status is want."""
        pid = self.start_sleep()
        ctl, exitf = str(self.sdir / "ctl"), str(self.sdir / "exit")
        t0 = time.perf_counter_ns()
        write_file(ctl, verb)
        status = read_to_eof(exitf)
        ms = (time.perf_counter_ns() - t0) / 1e6
        if status != want:
            raise RuntimeError(f"{verb!r} > ctl: exit read {status!r}, expected {want!r}")
        for _ in range(1000):  # the exit file answers once the shell has reported
            if not pid_alive(pid):
                break
            time.sleep(0.001)
        else:
            raise RuntimeError(f"{verb!r} > ctl: sleep {pid} still alive after exit read")
        return ms

    def close(self):
        os.rmdir(self.sdir)


def popen_kill(sig):
    """ms from os.kill(pid, sig) until waitpid returns, for a fresh `sleep 1000`."""
    p = subprocess.Popen(["sleep", "1000"])  # returns once the exec has happened
    t0 = time.perf_counter_ns()
    os.kill(p.pid, sig)
    _, wstatus = os.waitpid(p.pid, 0)
    ms = (time.perf_counter_ns() - t0) / 1e6
    p.returncode = -sig  # reaped above; keep subprocess from waiting again
    if not os.WIFSIGNALED(wstatus) or os.WTERMSIG(wstatus) != sig:
        raise RuntimeError(f"sleep ended with wait status {wstatus:#x}, not signal {sig}")
    return ms


def interleaved(fns, runs, warmup):
    """Lists of samples of each of fns, run interleaved so load changes hit all alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples = [[] for _ in fns]
    for _ in range(runs):
        for fn, out in zip(fns, samples):
            out.append(fn())
    return samples


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=GIB, help="bytes streamed in (a)")
    ap.add_argument("--tp-runs", type=int, default=3)
    ap.add_argument("--kill-runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2, help="warm-up kills of each kind")
    args = ap.parse_args()

    binary = sbxfs_binary()
    if not os.access(binary, os.X_OK):
        sys.exit(f"no sbxfs binary at {binary} (build it, or set SBXFS_BIN)")
    t_start = time.monotonic()
    m = Mount(binary)
    timer = start_watchdog(WATCHDOG_SECONDS, m.proc)
    ks = None
    try:
        sessions = m.mnt / "sessions"
        cgroup = m.cgroup_mode()

        # (a) stdout throughput
        n = [0]

        def sbx():
            n[0] += 1
            return sbx_stream(sessions, f"tp{n[0]}", args.size)

        t_sbx, t_pipe = interleaved([sbx, lambda: pipe_stream(args.size)], args.tp_runs, 0)

        # (b), (c) kill latency
        ks = SbxKill(sessions, "kill", m.proc.pid)
        term_sbx, term_py = interleaved(
            [lambda: ks.kill(b"kill\n", b"143\n"), lambda: popen_kill(signal.SIGTERM)],
            args.kill_runs, args.warmup)
        kill_sbx, kill_py = interleaved(
            [lambda: ks.kill(b"kill KILL\n", b"137\n"), lambda: popen_kill(signal.SIGKILL)],
            args.kill_runs, args.warmup)
        ks.close()
        ks = None
    finally:
        timer.cancel()
        if ks is not None:
            try:
                ks.close()
            except OSError:
                pass
        m.close()

    size = args.size
    sbx_s, pipe_s = statistics.median(t_sbx), statistics.median(t_pipe)
    sbx_bps, pipe_bps = size / sbx_s, size / pipe_s
    print(f"sbxfs exec benchmark ({binary}; cgroup: {cgroup})")
    print()
    print(f"(a) stdout throughput, {size} bytes ({size / GIB:g} GiB), median of {args.tp_runs}"
          " runs each, interleaved")
    print(f"    {'':44} {'seconds':>8} {'bytes/s':>14} {'GiB/s':>7}")
    print(f"    {'sbxfs: head -c in a session, cat stdout':44} {sbx_s:8.3f} {sbx_bps:14.0f}"
          f" {sbx_bps / GIB:7.3f}")
    print(f"    {'bash -c: head -c | cat > /dev/null':44} {pipe_s:8.3f} {pipe_bps:14.0f}"
          f" {pipe_bps / GIB:7.3f}")
    print(f"    {'ratio sbxfs / pipe':44} {'':8} {sbx_bps / pipe_bps:14.2f}")
    print("    runs, s: sbxfs " + " ".join(f"{t:.3f}" for t in t_sbx)
          + "; pipe " + " ".join(f"{t:.3f}" for t in t_pipe))
    print()
    print(f"(b, c) kill latency, {args.kill_runs} runs each after {args.warmup} warm-up,"
          " interleaved, ms")
    print(f"    {'':44} {'median':>8} {'p90':>8}")
    rows = [
        ("(b) echo kill > ctl; cat exit  (143)", term_sbx),
        ("    os.kill(SIGTERM) + waitpid", term_py),
        ("(c) echo 'kill KILL' > ctl; cat exit  (137)", kill_sbx),
        ("    os.kill(SIGKILL) + waitpid", kill_py),
    ]
    stats = {}
    for label, values in rows:
        stats[label] = med_p90(values)
        print(f"    {label:44} {stats[label][0]:8.3f} {stats[label][1]:8.3f}")
    for (label_s, sbx_v), (_, py_v) in ((rows[0], rows[1]), (rows[2], rows[3])):
        (sm, sp), (pm, pp) = med_p90(sbx_v), med_p90(py_v)
        name = "ratio (b) sbxfs / os.kill" if label_s.startswith("(b)") else \
            "ratio (c) sbxfs / os.kill"
        print(f"    {name:44} {sm / pm:8.1f} {sp / pp:8.1f}")
    print()
    print(f"total time {time.monotonic() - t_start:.1f} s")


if __name__ == "__main__":
    main()
